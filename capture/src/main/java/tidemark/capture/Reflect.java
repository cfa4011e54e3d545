package tidemark.capture;

import java.lang.reflect.Field;
import java.lang.reflect.Method;

/** Reflection helpers: anything whose binary shape may differ between Flink versions goes through here. */
final class Reflect {
    private Reflect() {}

    static Field field(Class<?> c, String name) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            try {
                Field f = k.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException ignored) {
                // look in the superclass
            }
        }
        return null;
    }

    static long longField(Object o, String name, long otherwise) {
        try {
            Field f = field(o.getClass(), name);
            return f == null ? otherwise : f.getLong(o);
        } catch (Throwable t) {
            return otherwise;
        }
    }

    /** Calls a public no-argument method by name. */
    static Object call(Object o, String name) throws Exception {
        Method m = o.getClass().getMethod(name);
        m.setAccessible(true);
        return m.invoke(o);
    }
}
