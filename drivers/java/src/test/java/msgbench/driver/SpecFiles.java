package msgbench.driver;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** Where the shared spec and vectors are: spec/ at the repository root, two levels up. */
final class SpecFiles {
    private SpecFiles() {
    }

    static Path specDir() {
        String prop = System.getProperty("msgbench.spec.dir");
        if (prop != null && Files.isRegularFile(Path.of(prop, "driver-protocol.md"))) {
            return Path.of(prop).toAbsolutePath().normalize();
        }
        // Bounded by the directory depth.
        for (Path d = Path.of(System.getProperty("user.dir")).toAbsolutePath(); d != null; d = d.getParent()) {
            if (Files.isRegularFile(d.resolve("spec/driver-protocol.md"))) {
                return d.resolve("spec").normalize();
            }
        }
        throw new IllegalStateException("spec/driver-protocol.md not found above " + System.getProperty("user.dir"));
    }

    /** The driver's own folder (msgbench runs the driver with it as the working directory). */
    static Path driverDir() {
        String prop = System.getProperty("msgbench.driver.dir");
        return Path.of(prop != null ? prop : System.getProperty("user.dir")).toAbsolutePath().normalize();
    }

    static List<Path> jsonFiles(String under) throws java.io.IOException {
        try (Stream<Path> s = Files.list(specDir().resolve(under))) {
            return s.filter(p -> p.toString().endsWith(".json")).sorted().collect(Collectors.toList());
        }
    }
}
