package msgbench.driver;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.nats.client.Nats;

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;

/**
 * The msgbench driver for Java (protocol msgbench.driver/v1, spec/driver-protocol.md): reads
 * the scenario on stdin, connects with jnats, writes {@code ready}, waits for {@code start},
 * runs, writes {@code progress} about once a second and then the {@code result}, and exits 0;
 * exits 2 after an {@code error} line when it cannot run the scenario.
 */
public final class Main {
    public static final int EXIT_OK = 0;
    public static final int EXIT_ERROR = 2;

    private Main() {
    }

    public static void main(String[] args) {
        OutputStream stdout = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out));
        // Only protocol lines may reach stdout: anything else printed goes to stderr.
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
        int status = run(System.in, stdout);
        System.err.flush();
        // The library's threads must not keep the process alive once the result is out.
        Runtime.getRuntime().halt(status);
    }

    /** Runs the whole protocol on the given streams; returns the exit status. */
    public static int run(InputStream stdin, OutputStream stdout) {
        ObjectMapper mapper = new ObjectMapper();
        ProtocolWriter out = new ProtocolWriter(stdout, mapper);
        CommandReader in = new CommandReader(stdin, mapper);
        try {
            String line = in.readLine();
            if (line == null) {
                throw DriverException.usage("no scenario on stdin");
            }
            RunContext ctx = new RunContext(Scenario.parse(mapper, line));
            try (Workload w = Workload.create(ctx)) {
                w.prepare();
                ClassWarmup.run();
                out.ready("java", "jnats", clientVersion(), w.notes());
                boolean started = in.awaitStart();
                ctx.start(System.nanoTime());
                if (started) {
                    in.watch(ctx::requestStop);
                } else {
                    ctx.requestStop(); // stop or end of input before start: nothing is sent
                }
                Report.Result result;
                try (ProgressTicker ticker = new ProgressTicker(out, ctx, w)) {
                    result = w.run();
                }
                out.result(result);
            }
            return EXIT_OK;
        } catch (DriverException e) {
            System.err.println("msgbench-driver-java: " + e.kind().wire() + ": " + e.getMessage());
            out.error(e.kind(), e.getMessage());
            return EXIT_ERROR;
        } catch (Exception | Error e) {
            e.printStackTrace();
            try {
                out.error(DriverException.Kind.INTERNAL, String.valueOf(e));
            } catch (RuntimeException ignored) {
                // stdout is gone; the exit status says it all
            }
            return EXIT_ERROR;
        }
    }

    /** jnats' version as its jar reports it ({@code Nats.CLIENT_VERSION}). */
    static String clientVersion() {
        String v = Nats.CLIENT_VERSION;
        if (v == null || v.isEmpty() || "development".equals(v)) {
            String fromManifest = Main.class.getPackage().getImplementationVersion();
            Package p = Nats.class.getPackage();
            if (p != null && p.getImplementationVersion() != null) {
                return p.getImplementationVersion();
            }
            return fromManifest != null ? "unknown (driver " + fromManifest + ")" : "unknown";
        }
        return v;
    }
}
