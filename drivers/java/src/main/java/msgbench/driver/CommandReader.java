package msgbench.driver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * msgbench's commands on stdin: the scenario, {@code start}, then {@code stop} or end of input.
 * Lines are read on the caller's thread until the run starts, then by a daemon watcher.
 */
public final class CommandReader {
    /** What a line after the scenario asked for. */
    public enum Command { START, STOP, END_OF_INPUT, OTHER }

    private final BufferedReader in;
    private final ObjectMapper mapper;

    public CommandReader(InputStream in, ObjectMapper mapper) {
        this.in = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        this.mapper = mapper;
    }

    /** The next non-blank line, or {@code null} at end of input. */
    public String readLine() throws IOException {
        // Bounded by the input: every iteration consumes a line.
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (!line.isBlank()) {
                return line;
            }
        }
        return null;
    }

    /** Reads the next command; unknown or malformed lines are logged and reported as OTHER. */
    public Command next() {
        String line;
        try {
            line = readLine();
        } catch (IOException e) {
            System.err.println("msgbench-driver-java: stdin: " + e);
            return Command.END_OF_INPUT;
        }
        if (line == null) {
            return Command.END_OF_INPUT;
        }
        try {
            JsonNode n = mapper.readTree(line);
            String type = n != null && n.hasNonNull("type") ? n.get("type").asText() : "";
            switch (type) {
                case "start":
                    return Command.START;
                case "stop":
                    return Command.STOP;
                default:
                    break;
            }
        } catch (IOException e) {
            // fall through: not JSON
        }
        System.err.println("msgbench-driver-java: ignoring input line: " + line);
        return Command.OTHER;
    }

    /** Blocks until {@code start}; false when {@code stop} or end of input came first. */
    public boolean awaitStart() {
        // Bounded by the input: every iteration consumes a line.
        while (true) {
            switch (next()) {
                case START:
                    return true;
                case STOP:
                case END_OF_INPUT:
                    return false;
                default:
                    break;
            }
        }
    }

    /** Watches stdin from now on: {@code onStop} runs once, at {@code stop} or end of input. */
    public void watch(Runnable onStop) {
        Thread t = new Thread(() -> {
            while (true) {
                Command c = next();
                if (c == Command.STOP || c == Command.END_OF_INPUT) {
                    onStop.run();
                    return;
                }
            }
        }, "msgbench-stdin");
        t.setDaemon(true);
        t.start();
    }
}
