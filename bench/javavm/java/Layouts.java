/**
 * Layouts: objects of 24 classes with different field layouts (sizes,
 * primitive and reference fields at the same offsets, subclasses adding
 * fields to a superclass) take turns in the same local variables, so a
 * debugger reading one level of fields asks ObjectReference.GetValues for
 * many classes whose field IDs must never be mixed up: HotSpot does not
 * check that a field ID belongs to the object's class.
 */
public class Layouts {
    static final Object[] SHAPES = new Object[24];

    public static void main(String[] args) {
        Support.settleSystemThreads();
        for (int k = 0; k < SHAPES.length; k++) {
            SHAPES[k] = make(k);
        }
        int i = 0;
        while (true) {
            Object shape = SHAPES[i % SHAPES.length]; // @breakpoint
            Object other = SHAPES[(i * 7 + 3) % SHAPES.length];
            i++;
        }
    }

    static Object make(int k) {
        switch (k) {
            case 0: return new L00(0);
            case 1: return new L01(1);
            case 2: return new L02(2);
            case 3: return new L03(3);
            case 4: return new L04(4);
            case 5: return new L05(5);
            case 6: return new L06(6);
            case 7: return new L07(7);
            case 8: return new L08(8);
            case 9: return new L09(9);
            case 10: return new L10(10);
            case 11: return new L11(11);
            case 12: return new L12(12);
            case 13: return new L13(13);
            case 14: return new L14(14);
            case 15: return new L15(15);
            case 16: return new L16(16);
            case 17: return new L17(17);
            case 18: return new L18(18);
            case 19: return new L19(19);
            case 20: return new L20(20);
            case 21: return new L21(21);
            case 22: return new L22(22);
            case 23: return new L23(23);
            default: throw new IllegalArgumentException();
        }
    }

    static class L00 {
        Object f0_0;
        float f0_1;
        float f0_2;
        Object f0_3;
        L00(int n) {
            f0_0 = null;
            f0_1 = (n + 1)/4f;
            f0_2 = (n + 2)/4f;
            f0_3 = "o" + n;
        }
    }

    static class L01 {
        byte f1_0;
        double f1_1;
        Object f1_2;
        float f1_3;
        int[] f1_4;
        L01(int n) {
            f1_0 = (byte) (n + 0);
            f1_1 = (n + 1)+0.25;
            f1_2 = null;
            f1_3 = (n + 3)/4f;
            f1_4 = new int[] {(n + 4), (n + 4)};
        }
    }

    static class L02 {
        double f2_0;
        int f2_1;
        float f2_2;
        short f2_3;
        double f2_4;
        L02(int n) {
            f2_0 = (n + 0)+0.25;
            f2_1 = (n + 1)*31;
            f2_2 = (n + 2)/4f;
            f2_3 = (short) ((n + 3)*7);
            f2_4 = (n + 4)+0.25;
        }
    }

    static class L03 extends L02 {
        Object f3_0;
        L03(int n) {
            super(n + 1);
            f3_0 = null;
        }
    }

    static class L04 {
        String f4_0;
        L04(int n) {
            f4_0 = "s(n + 0)";
        }
    }

    static class L05 {
        float f5_0;
        int[] f5_1;
        Long f5_2;
        String f5_3;
        L05(int n) {
            f5_0 = (n + 0)/4f;
            f5_1 = new int[] {(n + 1), (n + 1)};
            f5_2 = Long.valueOf((n + 2));
            f5_3 = "s(n + 3)";
        }
    }

    static class L06 {
        String f6_0;
        long f6_1;
        L06(int n) {
            f6_0 = "s(n + 0)";
            f6_1 = (n + 1) * 1000003L;
        }
    }

    static class L07 extends L06 {
        int f7_0;
        long f7_1;
        long f7_2;
        byte f7_3;
        byte f7_4;
        L07(int n) {
            super(n + 1);
            f7_0 = (n + 0)*31;
            f7_1 = (n + 1) * 1000003L;
            f7_2 = (n + 2) * 1000003L;
            f7_3 = (byte) (n + 3);
            f7_4 = (byte) (n + 4);
        }
    }

    static class L08 {
        long f8_0;
        float f8_1;
        char f8_2;
        float f8_3;
        String f8_4;
        L08(int n) {
            f8_0 = (n + 0) * 1000003L;
            f8_1 = (n + 1)/4f;
            f8_2 = (char) ('a' + (n + 2) % 26);
            f8_3 = (n + 3)/4f;
            f8_4 = "s(n + 4)";
        }
    }

    static class L09 {
        Object f9_0;
        byte f9_1;
        L09(int n) {
            f9_0 = null;
            f9_1 = (byte) (n + 1);
        }
    }

    static class L10 {
        float f10_0;
        long f10_1;
        int[] f10_2;
        L10(int n) {
            f10_0 = (n + 0)/4f;
            f10_1 = (n + 1) * 1000003L;
            f10_2 = new int[] {(n + 2), (n + 2)};
        }
    }

    static class L11 extends L10 {
        float f11_0;
        L11(int n) {
            super(n + 1);
            f11_0 = (n + 0)/4f;
        }
    }

    static class L12 {
        boolean f12_0;
        Object f12_1;
        int f12_2;
        L12(int n) {
            f12_0 = (n + 0) % 2 == 0;
            f12_1 = "o" + n;
            f12_2 = (n + 2)*31;
        }
    }

    static class L13 {
        char f13_0;
        byte f13_1;
        Object f13_2;
        L13(int n) {
            f13_0 = (char) ('a' + (n + 0) % 26);
            f13_1 = (byte) (n + 1);
            f13_2 = null;
        }
    }

    static class L14 {
        long f14_0;
        int f14_1;
        String f14_2;
        L14(int n) {
            f14_0 = (n + 0) * 1000003L;
            f14_1 = (n + 1)*31;
            f14_2 = "s(n + 2)";
        }
    }

    static class L15 extends L14 {
        boolean f15_0;
        L15(int n) {
            super(n + 1);
            f15_0 = (n + 0) % 2 == 0;
        }
    }

    static class L16 {
        short f16_0;
        L16(int n) {
            f16_0 = (short) ((n + 0)*7);
        }
    }

    static class L17 {
        int f17_0;
        long f17_1;
        int[] f17_2;
        long f17_3;
        L17(int n) {
            f17_0 = (n + 0)*31;
            f17_1 = (n + 1) * 1000003L;
            f17_2 = new int[] {(n + 2), (n + 2)};
            f17_3 = (n + 3) * 1000003L;
        }
    }

    static class L18 {
        byte f18_0;
        long f18_1;
        L18(int n) {
            f18_0 = (byte) (n + 0);
            f18_1 = (n + 1) * 1000003L;
        }
    }

    static class L19 extends L18 {
        boolean f19_0;
        Long f19_1;
        boolean f19_2;
        boolean f19_3;
        L19(int n) {
            super(n + 1);
            f19_0 = (n + 0) % 2 == 0;
            f19_1 = Long.valueOf((n + 1));
            f19_2 = (n + 2) % 2 == 0;
            f19_3 = (n + 3) % 2 == 0;
        }
    }

    static class L20 {
        String f20_0;
        L20(int n) {
            f20_0 = "s(n + 0)";
        }
    }

    static class L21 {
        int[] f21_0;
        short f21_1;
        L21(int n) {
            f21_0 = new int[] {(n + 0), (n + 0)};
            f21_1 = (short) ((n + 1)*7);
        }
    }

    static class L22 {
        int f22_0;
        short f22_1;
        char f22_2;
        L22(int n) {
            f22_0 = (n + 0)*31;
            f22_1 = (short) ((n + 1)*7);
            f22_2 = (char) ('a' + (n + 2) % 26);
        }
    }

    static class L23 extends L22 {
        boolean f23_0;
        L23(int n) {
            super(n + 1);
            f23_0 = (n + 0) % 2 == 0;
        }
    }

}
