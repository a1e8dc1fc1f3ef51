package msgbench.driver;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The driver as msgbench runs it: a child process (this JVM's java, the test class path, the
 * driver's main class) in the driver's folder, lines written to its stdin and read from its
 * stdout, stderr kept for error messages.
 */
final class DriverProcess implements AutoCloseable {
    /** Marks the end of stdout in the line queue. */
    private static final String EOF = "\u0000EOF";

    private final Process process;
    private final OutputStream stdin;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final StringBuffer stderr = new StringBuffer();
    private final List<String> seen = new ArrayList<>();

    private DriverProcess(Process process) {
        this.process = process;
        this.stdin = process.getOutputStream();
        pump(process.getInputStream(), line -> lines.add(line), () -> lines.add(EOF), "stdout");
        pump(process.getErrorStream(), line -> stderr.append(line).append('\n'), () -> { }, "stderr");
    }

    static DriverProcess start() throws IOException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        ProcessBuilder pb = new ProcessBuilder(java.toString(),
                "-cp", System.getProperty("java.class.path"),
                Main.class.getName())
                .directory(SpecFiles.driverDir().toFile());
        return new DriverProcess(pb.start());
    }

    private static void pump(InputStream in, java.util.function.Consumer<String> sink, Runnable atEnd, String name) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                for (String l = r.readLine(); l != null; l = r.readLine()) {
                    sink.accept(l);
                }
            } catch (IOException e) {
                // the process is gone
            } finally {
                atEnd.run();
            }
        }, "driver-" + name);
        t.setDaemon(true);
        t.start();
    }

    void send(String line) throws IOException {
        stdin.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        stdin.flush();
    }

    void closeStdin() throws IOException {
        stdin.close();
    }

    /** The next stdout line, or null at end of output; fails after {@code timeout}. */
    String nextLine(Duration timeout) throws InterruptedException {
        String l = lines.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (l == null) {
            throw new AssertionError("no line from the driver within " + timeout + "; stderr:\n" + stderr());
        }
        if (EOF.equals(l)) {
            lines.add(EOF);
            return null;
        }
        seen.add(l);
        return l;
    }

    int waitFor(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("the driver did not exit within " + timeout + "; stderr:\n" + stderr());
        }
        return process.exitValue();
    }

    /** Every stdout line read so far. */
    List<String> lines() {
        return seen;
    }

    String stderr() {
        String s = stderr.toString();
        return s.length() > 4096 ? s.substring(s.length() - 4096) : s;
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
        }
    }
}
