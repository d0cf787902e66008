/**
 * NewClasses: each call in the loop enters a class that was never used
 * before (C00..C59), so a debugger stepping into them meets cold class
 * metadata on nearly every stop. Generated once; edit by hand as needed.
 */
public class NewClasses {
    static final class State {
        int round;
        int last = -1;
        String where = "start";
    }

    public static void main(String[] args) {
        Support.startWorkers("newclasses-worker-", 2);
        State st = new State();
        int round = 0;
        while (true) {
            round++; // @breakpoint
            st.round = round;
            C00.run(st);
            C01.run(st);
            C02.run(st);
            C03.run(st);
            C04.run(st);
            C05.run(st);
            C06.run(st);
            C07.run(st);
            C08.run(st);
            C09.run(st);
            C10.run(st);
            C11.run(st);
            C12.run(st);
            C13.run(st);
            C14.run(st);
            C15.run(st);
            C16.run(st);
            C17.run(st);
            C18.run(st);
            C19.run(st);
            C20.run(st);
            C21.run(st);
            C22.run(st);
            C23.run(st);
            C24.run(st);
            C25.run(st);
            C26.run(st);
            C27.run(st);
            C28.run(st);
            C29.run(st);
            C30.run(st);
            C31.run(st);
            C32.run(st);
            C33.run(st);
            C34.run(st);
            C35.run(st);
            C36.run(st);
            C37.run(st);
            C38.run(st);
            C39.run(st);
            C40.run(st);
            C41.run(st);
            C42.run(st);
            C43.run(st);
            C44.run(st);
            C45.run(st);
            C46.run(st);
            C47.run(st);
            C48.run(st);
            C49.run(st);
            C50.run(st);
            C51.run(st);
            C52.run(st);
            C53.run(st);
            C54.run(st);
            C55.run(st);
            C56.run(st);
            C57.run(st);
            C58.run(st);
            C59.run(st);
        }
    }

    static final class C00 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 0;
            st.where = "C00";
        }
    }

    static final class C01 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 1;
            st.where = "C01";
        }
    }

    static final class C02 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 2;
            st.where = "C02";
        }
    }

    static final class C03 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 3;
            st.where = "C03";
        }
    }

    static final class C04 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 4;
            st.where = "C04";
        }
    }

    static final class C05 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 5;
            st.where = "C05";
        }
    }

    static final class C06 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 6;
            st.where = "C06";
        }
    }

    static final class C07 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 7;
            st.where = "C07";
        }
    }

    static final class C08 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 8;
            st.where = "C08";
        }
    }

    static final class C09 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 9;
            st.where = "C09";
        }
    }

    static final class C10 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 10;
            st.where = "C10";
        }
    }

    static final class C11 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 11;
            st.where = "C11";
        }
    }

    static final class C12 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 12;
            st.where = "C12";
        }
    }

    static final class C13 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 13;
            st.where = "C13";
        }
    }

    static final class C14 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 14;
            st.where = "C14";
        }
    }

    static final class C15 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 15;
            st.where = "C15";
        }
    }

    static final class C16 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 16;
            st.where = "C16";
        }
    }

    static final class C17 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 17;
            st.where = "C17";
        }
    }

    static final class C18 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 18;
            st.where = "C18";
        }
    }

    static final class C19 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 19;
            st.where = "C19";
        }
    }

    static final class C20 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 20;
            st.where = "C20";
        }
    }

    static final class C21 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 21;
            st.where = "C21";
        }
    }

    static final class C22 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 22;
            st.where = "C22";
        }
    }

    static final class C23 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 23;
            st.where = "C23";
        }
    }

    static final class C24 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 24;
            st.where = "C24";
        }
    }

    static final class C25 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 25;
            st.where = "C25";
        }
    }

    static final class C26 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 26;
            st.where = "C26";
        }
    }

    static final class C27 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 27;
            st.where = "C27";
        }
    }

    static final class C28 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 28;
            st.where = "C28";
        }
    }

    static final class C29 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 29;
            st.where = "C29";
        }
    }

    static final class C30 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 30;
            st.where = "C30";
        }
    }

    static final class C31 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 31;
            st.where = "C31";
        }
    }

    static final class C32 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 32;
            st.where = "C32";
        }
    }

    static final class C33 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 33;
            st.where = "C33";
        }
    }

    static final class C34 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 34;
            st.where = "C34";
        }
    }

    static final class C35 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 35;
            st.where = "C35";
        }
    }

    static final class C36 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 36;
            st.where = "C36";
        }
    }

    static final class C37 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 37;
            st.where = "C37";
        }
    }

    static final class C38 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 38;
            st.where = "C38";
        }
    }

    static final class C39 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 39;
            st.where = "C39";
        }
    }

    static final class C40 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 40;
            st.where = "C40";
        }
    }

    static final class C41 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 41;
            st.where = "C41";
        }
    }

    static final class C42 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 42;
            st.where = "C42";
        }
    }

    static final class C43 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 43;
            st.where = "C43";
        }
    }

    static final class C44 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 44;
            st.where = "C44";
        }
    }

    static final class C45 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 45;
            st.where = "C45";
        }
    }

    static final class C46 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 46;
            st.where = "C46";
        }
    }

    static final class C47 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 47;
            st.where = "C47";
        }
    }

    static final class C48 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 48;
            st.where = "C48";
        }
    }

    static final class C49 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 49;
            st.where = "C49";
        }
    }

    static final class C50 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 50;
            st.where = "C50";
        }
    }

    static final class C51 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 51;
            st.where = "C51";
        }
    }

    static final class C52 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 52;
            st.where = "C52";
        }
    }

    static final class C53 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 53;
            st.where = "C53";
        }
    }

    static final class C54 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 54;
            st.where = "C54";
        }
    }

    static final class C55 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 55;
            st.where = "C55";
        }
    }

    static final class C56 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 56;
            st.where = "C56";
        }
    }

    static final class C57 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 57;
            st.where = "C57";
        }
    }

    static final class C58 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 58;
            st.where = "C58";
        }
    }

    static final class C59 {
        static int hits;

        static void run(State st) {
            hits++;
            st.last = 59;
            st.where = "C59";
        }
    }
}
