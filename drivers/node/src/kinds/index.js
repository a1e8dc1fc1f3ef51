// The four kinds of the driver protocol. Each `setup(ctx)` connects and prepares (before
// `ready`) and returns {counts(), run(ctl), close()}.
import * as jspub from "./jspub.js";
import * as latency from "./latency.js";
import * as pubsub from "./pubsub.js";
import * as request from "./request.js";

export const KIND_SETUP = {
  pubsub: pubsub.setup,
  latency: latency.setup,
  request: request.setup,
  js_pub: jspub.setup,
};
