//! A `msgbench agent` process on the control server of a test, started as a user would start
//! it and killed on drop, with its stderr collected as it comes (what tests wait for).

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running agent whose stderr is collected as it comes.
pub struct Agent {
    pub child: Child,
    log: Arc<Mutex<String>>,
}

impl Agent {
    pub fn start(url: &str, name: &str, trust: &[&str], env: &[(&str, &str)]) -> Agent {
        let mut cmd = super::bin();
        cmd.args([
            "agent",
            "--control",
            url,
            "--name",
            name,
            "--label",
            "zone=test",
        ]);
        if trust.is_empty() {
            cmd.arg("--insecure-control");
        }
        for k in trust {
            cmd.args(["--trust", k]);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the agent starts");
        let log = Arc::new(Mutex::new(String::new()));
        let (err, sink) = (child.stderr.take().unwrap(), Arc::clone(&log));
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let a = Agent { child, log };
        assert!(
            a.wait_for("listening on", super::HANG),
            "the agent did not come up: {}",
            a.log()
        );
        a
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits for a line with `needle` in the agent's log. `timeout` only guards against a hang:
    /// the wait ends at the line, however long a busy machine takes to get there.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.log().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
    }
}
