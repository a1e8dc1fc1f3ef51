// About once a second while running: {"type": "progress", "t_s", "sent", "received"}.
import { now } from "../clock.js";
import { emit } from "../protocol/lines.js";

/** Starts the ticker; `counts()` returns {sent, received} totals so far. Returns a stop function. */
export function startProgress(ctl, counts) {
  const timer = setInterval(() => {
    const { sent, received } = counts();
    const t_s = Math.round((now() - ctl.startNs) / 1e6) / 1e3;
    emit({ type: "progress", t_s, sent, received });
  }, 1000);
  return () => clearInterval(timer);
}
