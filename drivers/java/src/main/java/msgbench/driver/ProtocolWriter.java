package msgbench.driver;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;

/**
 * Writes the driver's protocol lines: one JSON object per line, flushed at once. Every thread
 * that writes (the main thread, the progress ticker) goes through this one synchronized writer,
 * and nothing else may reach the real stdout ({@link Main} points {@code System.out} at stderr).
 */
public final class ProtocolWriter {
    private final OutputStream out;
    private final ObjectMapper mapper;

    public ProtocolWriter(OutputStream out, ObjectMapper mapper) {
        this.out = out;
        this.mapper = mapper;
    }

    public synchronized void write(ObjectNode line) {
        try {
            out.write(mapper.writeValueAsBytes(line));
            out.write('\n');
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write to stdout", e);
        }
    }

    public void ready(String language, String library, String version, String notes) {
        ObjectNode line = mapper.createObjectNode().put("type", "ready");
        ObjectNode client = line.putObject("client")
                .put("language", language)
                .put("library", library)
                .put("version", version);
        if (notes != null && !notes.isEmpty()) {
            client.put("notes", notes);
        }
        write(line);
    }

    public void progress(double tS, long sent, long received) {
        write(mapper.createObjectNode()
                .put("type", "progress")
                .put("t_s", Math.round(tS * 1000.0) / 1000.0)
                .put("sent", sent)
                .put("received", received));
    }

    public void result(Report.Result result) {
        ObjectNode line = mapper.createObjectNode().put("type", "result");
        line.set("result", mapper.valueToTree(result));
        write(line);
    }

    public void error(DriverException.Kind kind, String message) {
        write(mapper.createObjectNode()
                .put("type", "error")
                .put("kind", kind.wire())
                .put("message", message == null ? "" : message));
    }
}
