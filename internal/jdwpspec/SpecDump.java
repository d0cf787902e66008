// SpecDump prints every integer constant of the JDK's com.sun.tools.jdi.JDWP
// (generated from the JDWP specification) as "<nested class path> <field> <value>",
// e.g. "JDWP$VirtualMachine$IDSizes COMMAND 7". Run by TestSpecTables with
//   java --add-exports jdk.jdi/com.sun.tools.jdi=ALL-UNNAMED \
//        --add-opens jdk.jdi/com.sun.tools.jdi=ALL-UNNAMED SpecDump.java
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;

public class SpecDump {
    static void walk(Class<?> c, String prefix) throws Exception {
        String path = prefix + c.getSimpleName();
        for (Field f : c.getDeclaredFields()) {
            int m = f.getModifiers();
            Class<?> t = f.getType();
            if (Modifier.isStatic(m) && Modifier.isFinal(m)
                    && (t == int.class || t == byte.class || t == short.class)) {
                f.setAccessible(true);
                System.out.println(path + " " + f.getName() + " " + ((Number) f.get(null)).longValue());
            }
        }
        for (Class<?> n : c.getDeclaredClasses()) {
            walk(n, path + "$");
        }
    }

    public static void main(String[] args) throws Exception {
        walk(Class.forName("com.sun.tools.jdi.JDWP"), "");
    }
}
