package msgbench.driver;

/**
 * A reason the driver cannot run its scenario: reported as an {@code error} line (its
 * {@link #kind()} is one of the protocol's error kinds) followed by exit status 2.
 */
public final class DriverException extends Exception {
    private static final long serialVersionUID = 1L;

    /** The protocol's error kinds. */
    public enum Kind {
        UNSUPPORTED("unsupported"),
        CONNECT("connect"),
        USAGE("usage"),
        INTERNAL("internal");

        private final String wire;

        Kind(String wire) {
            this.wire = wire;
        }

        public String wire() {
            return wire;
        }
    }

    private final Kind kind;

    public DriverException(Kind kind, String message) {
        super(message);
        this.kind = kind;
    }

    public DriverException(Kind kind, String message, Throwable cause) {
        super(message, cause);
        this.kind = kind;
    }

    public Kind kind() {
        return kind;
    }

    static DriverException usage(String message) {
        return new DriverException(Kind.USAGE, message);
    }
}
