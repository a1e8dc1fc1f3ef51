//! Connections: one async-nats `Client` (one TCP connection) per publisher, subscriber or
//! requester, as msgbench's own engine does, so each reports its own span.
//!
//! Settings that differ from async-nats' defaults, and why:
//! - `subscription_capacity`: async-nats buffers each subscription's messages in a bounded
//!   channel (default 65,536 messages) and drops what does not fit, reporting a slow consumer.
//!   A publisher on the same machine can run ahead of a subscriber by more than that in a
//!   burst, so subscribers get [`SUBSCRIPTION_CAPACITY`]: the channel only holds memory for
//!   what is actually queued, and a drop then means a real slow consumer.
//! - `request_timeout`: async-nats' default is 10 s; requests here time out after the
//!   scenario's `timeout_ms`, which is what msgbench counts as `request_timeout`.
//! - `connection_timeout`: the scenario's `connect_timeout_ms` (async-nats' default is 5 s).

use std::sync::Arc;
use std::time::Duration;

use async_nats::{Client, ConnectOptions, Subscriber};
use futures::StreamExt;

use crate::control::DriverError;
use crate::errors::ErrorCounts;
use crate::protocol::{ErrorKind, Scenario};

/// Messages a subscription may queue in the client before async-nats drops them (2^22, about
/// 4 M; the default is 2^16).
pub const SUBSCRIPTION_CAPACITY: usize = 1 << 22;

/// Connects one client named `name`, counting its connection events into `errors`.
pub async fn connect(
    scn: &Scenario,
    name: &str,
    errors: &Arc<ErrorCounts>,
) -> Result<Client, DriverError> {
    let errors = errors.clone();
    let servers: Vec<&str> = scn
        .server
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if servers.is_empty() {
        return Err(DriverError::new(
            ErrorKind::Usage,
            "the scenario names no server",
        ));
    }
    ConnectOptions::new()
        .name(name)
        .connection_timeout(Duration::from_millis(scn.connect_timeout_ms))
        .request_timeout(Some(Duration::from_millis(scn.timeout_ms)))
        .subscription_capacity(SUBSCRIPTION_CAPACITY)
        .event_callback(move |event| {
            let errors = errors.clone();
            async move { errors.on_event(&event) }
        })
        .connect(servers.as_slice())
        .await
        .map_err(|e| {
            DriverError::new(
                ErrorKind::Connect,
                format!("cannot connect to {}: {e}", scn.server),
            )
        })
}

/// Subscribes and waits until the server has registered the interest.
///
/// async-nats' `flush` only writes its buffer to the socket; it does not wait for the server.
/// A publisher on another connection could then beat the SUB and its first messages would
/// find no interest. The server handles one connection's input in order, so a message this
/// connection publishes to its own private inbox and gets back proves the SUB before it was
/// processed.
pub async fn subscribe_confirmed(
    client: &Client,
    subject: &str,
    timeout: Duration,
) -> Result<Subscriber, DriverError> {
    let sub = client
        .subscribe(subject.to_string())
        .await
        .map_err(|e| DriverError::new(ErrorKind::Internal, format!("cannot subscribe: {e}")))?;
    let probe = client.new_inbox();
    let mut echo = client
        .subscribe(probe.clone())
        .await
        .map_err(|e| DriverError::new(ErrorKind::Internal, format!("cannot subscribe: {e}")))?;
    client
        .publish(probe, bytes::Bytes::new())
        .await
        .map_err(|e| DriverError::new(ErrorKind::Internal, format!("cannot publish: {e}")))?;
    match tokio::time::timeout(timeout, echo.next()).await {
        Ok(Some(_)) => {}
        _ => {
            return Err(DriverError::new(
                ErrorKind::Connect,
                "the server did not confirm the subscription in time",
            ))
        }
    }
    // Dropping the probe's subscriber unsubscribes it.
    drop(echo);
    Ok(sub)
}
