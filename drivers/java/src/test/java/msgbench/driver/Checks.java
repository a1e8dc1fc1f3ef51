package msgbench.driver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.IntNode;

/**
 * The vectors' checks: {@code PATH OP VALUE}, where PATH is dot-separated into the result
 * ({@code x.length} is an array's length), OP one of == != >= <= > <, and VALUE a JSON literal.
 * A path that does not exist fails the check.
 */
final class Checks {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Checks() {
    }

    /** Null when the check passes, else why it fails. */
    static String failure(JsonNode result, String check) {
        String[] parts = check.trim().split("\\s+", 3);
        if (parts.length != 3) {
            return "malformed check: " + check;
        }
        String path = parts[0];
        String op = parts[1];
        JsonNode expected;
        try {
            expected = MAPPER.readTree(parts[2]);
        } catch (Exception e) {
            return "malformed value in check: " + check;
        }
        JsonNode actual = resolve(result, path);
        if (actual == null) {
            return check + ": " + path + " does not exist";
        }
        boolean ok;
        if (actual.isNumber() && expected.isNumber()) {
            int c = actual.decimalValue().compareTo(expected.decimalValue());
            ok = switch (op) {
                case "==" -> c == 0;
                case "!=" -> c != 0;
                case ">=" -> c >= 0;
                case "<=" -> c <= 0;
                case ">" -> c > 0;
                case "<" -> c < 0;
                default -> throw new IllegalArgumentException("unknown operator " + op);
            };
        } else {
            ok = switch (op) {
                case "==" -> actual.equals(expected);
                case "!=" -> !actual.equals(expected);
                case ">=", "<=", ">", "<" -> false;
                default -> throw new IllegalArgumentException("unknown operator " + op);
            };
        }
        return ok ? null : check + ": got " + actual;
    }

    static JsonNode resolve(JsonNode root, String path) {
        JsonNode n = root;
        for (String key : path.split("\\.")) {
            if (n == null) {
                return null;
            }
            if ("length".equals(key) && n.isArray()) {
                n = IntNode.valueOf(n.size());
            } else if (n.isObject()) {
                n = n.get(key);
            } else {
                return null;
            }
        }
        return n;
    }
}
