// Entries of the result's `clients`: one per connection and role, with its own span.

const seconds = (fromNs, toNs) => (fromNs === null || toNs === null || toNs < fromNs ? 0 : (toNs - fromNs) / 1e9);

/** A publisher: first send to last send. */
export const pubEntry = (id, { msgs, bytes, firstNs, lastNs }) => ({
  role: "pub",
  id,
  msgs,
  bytes,
  seconds: seconds(firstNs, lastNs),
});

/** A receiver: the run's start to its last receive. */
export const subEntry = (id, { msgs, bytes, startNs, lastNs }) => ({
  role: "sub",
  id,
  msgs,
  bytes,
  seconds: seconds(startNs, lastNs),
});
