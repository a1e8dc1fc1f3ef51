package msgbench.driver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;

import java.io.IOException;
import java.util.Set;

/** spec/driver-protocol.schema.json, as a validator for every line the driver writes. */
final class ProtocolSchema {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static JsonSchema schema;

    private ProtocolSchema() {
    }

    private static synchronized JsonSchema schema() throws IOException {
        if (schema == null) {
            ObjectNode root = (ObjectNode) MAPPER.readTree(
                    SpecFiles.specDir().resolve("driver-protocol.schema.json").toFile());
            // "$id" is a bare name, not a URI; the schema refers only to its own "#/$defs/...".
            root.remove("$id");
            schema = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012).getSchema(root);
        }
        return schema;
    }

    /** Parses one line and checks it against the schema; fails the test otherwise. */
    static JsonNode validate(String line) throws IOException {
        JsonNode n;
        try {
            n = MAPPER.readTree(line);
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + line, e);
        }
        Set<ValidationMessage> errors = schema().validate(n);
        if (!errors.isEmpty()) {
            throw new AssertionError("line does not match the protocol schema: " + errors + "\n" + line);
        }
        return n;
    }
}
