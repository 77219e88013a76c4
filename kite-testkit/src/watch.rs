//! Watches: a stream of ADDED, MODIFIED and DELETED events from a
//! resourceVersion on, with bookmarks when asked, and `410 Gone` for a
//! version the server no longer has.

use crate::read::Selectors;
use crate::registry::ResourceType;
use crate::shape::Shape;
use crate::state::Inner;
use crate::status::ApiError;
use crate::store::{Event, EventKind};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// What a watch asked for.
struct Request {
    resource: Arc<ResourceType>,
    namespace: Option<String>,
    selectors: Selectors,
    bookmarks: bool,
    shape: Shape,
    timeout: Option<Duration>,
}

impl Request {
    fn matches(&self, object: &Value) -> bool {
        let namespace_ok = !self.resource.namespaced
            || self.namespace.as_deref().is_none_or(|ns| object["metadata"]["namespace"].as_str() == Some(ns));
        namespace_ok && self.selectors.matches(object)
    }

    fn line(&self, kind: &str, object: &Value) -> Bytes {
        let object = self.shape.one(&self.resource, object);
        let mut line = json!({"type": kind, "object": object}).to_string();
        line.push('\n');
        Bytes::from(line)
    }

    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = match self.shape {
            Shape::Metadata => {
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata})
            }
            _ => {
                json!({"kind": self.resource.kind, "apiVersion": self.resource.api_version(self.resource.preferred_version()), "metadata": metadata})
            }
        };
        let mut line = json!({"type": "BOOKMARK", "object": object}).to_string();
        line.push('\n');
        Bytes::from(line)
    }

    /// The event this watch sends for `event`, if any: an object that starts
    /// or stops matching the selectors is ADDED or DELETED for this watch.
    fn translate(&self, event: &Event) -> Option<Bytes> {
        if event.key != self.resource.key() {
            return None;
        }
        let now = self.matches(&event.object);
        match event.kind {
            EventKind::Modified => {
                let before = event.previous.as_ref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (true, true) => Some(self.line("MODIFIED", &event.object)),
                    (false, true) => Some(self.line("ADDED", &event.object)),
                    (true, false) => Some(self.line("DELETED", &event.object)),
                    (false, false) => None,
                }
            }
            kind => now.then(|| self.line(kind.as_str(), &event.object)),
        }
    }
}

/// Answers a watch request.
pub fn watch(
    inner: &Arc<Inner>,
    resource: Arc<ResourceType>,
    namespace: Option<String>,
    query: &HashMap<String, String>,
    shape: Shape,
) -> Result<Response, ApiError> {
    let request = Request {
        selectors: Selectors::from_query(query)?,
        bookmarks: query.get("allowWatchBookmarks").is_some_and(|v| v == "true"),
        shape,
        timeout: query.get("timeoutSeconds").and_then(|t| t.parse::<u64>().ok()).map(Duration::from_secs),
        resource,
        namespace,
    };
    let send_initial = query.get("sendInitialEvents").is_some_and(|v| v == "true");
    let from: Option<u64> = match query.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(rv) => Some(rv.parse().map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?),
    };
    let (initial, backlog, receiver, current_rv) = {
        let store = inner.store();
        let current_rv = store.resource_version();
        match from {
            Some(rv) if !send_initial => match store.subscribe_from(&request.resource.key(), rv) {
                Ok((backlog, receiver)) => (Vec::new(), backlog, receiver, current_rv),
                Err(oldest) => {
                    // As the API server does: the watch opens, then says the version is gone.
                    let status = ApiError::gone(format!("too old resource version: {rv} ({oldest})")).to_status();
                    let line = format!("{}\n", json!({"type": "ERROR", "object": status}));
                    return Ok(streaming(Body::from(line)));
                }
            },
            _ => {
                let initial: Vec<Value> = store
                    .list(&request.resource.key())
                    .map(|(_, o)| o.clone())
                    .filter(|o| request.matches(o))
                    .collect();
                (initial, Vec::new(), store.subscribe(), current_rv)
            }
        }
    };
    let (sender, lines) = mpsc::channel::<Bytes>(256);
    let mut drops = inner.watch_drops.subscribe();
    let bookmark_interval = inner.config.bookmark_interval;
    inner.runtime.spawn(async move {
        let mut last_rv = from.unwrap_or(current_rv);
        for object in &initial {
            if sender.send(request.line("ADDED", object)).await.is_err() {
                return;
            }
        }
        if send_initial && sender.send(request.bookmark(current_rv, true)).await.is_err() {
            return;
        }
        for event in backlog {
            last_rv = event.rv;
            if let Some(line) = request.translate(&event)
                && sender.send(line).await.is_err()
            {
                return;
            }
        }
        pump(request, receiver, sender, &mut drops, bookmark_interval, last_rv).await;
    });
    let stream = futures::stream::unfold(lines, |mut lines| async move {
        lines.recv().await.map(|line| (Ok::<Bytes, std::convert::Infallible>(line), lines))
    });
    Ok(streaming(Body::from_stream(stream)))
}

async fn pump(
    request: Request,
    mut receiver: broadcast::Receiver<Arc<Event>>,
    sender: mpsc::Sender<Bytes>,
    drops: &mut tokio::sync::watch::Receiver<u64>,
    bookmark_interval: Duration,
    mut last_rv: u64,
) {
    let deadline = request.timeout.map(|t| tokio::time::Instant::now() + t);
    let mut bookmarks = tokio::time::interval(bookmark_interval);
    bookmarks.tick().await;
    loop {
        let timeout = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            received = receiver.recv() => match received {
                Ok(event) => {
                    if event.rv <= last_rv {
                        continue;
                    }
                    last_rv = event.rv;
                    if let Some(line) = request.translate(&event)
                        && sender.send(line).await.is_err()
                    {
                        return;
                    }
                }
                // A watcher that fell behind is closed; its client watches again.
                Err(_) => return,
            },
            _ = bookmarks.tick(), if request.bookmarks => {
                if sender.send(request.bookmark(last_rv, false)).await.is_err() {
                    return;
                }
            }
            _ = drops.changed() => return,
            _ = timeout => return,
            _ = sender.closed() => return,
        }
    }
}

fn streaming(body: Body) -> Response {
    ([(http::header::CONTENT_TYPE, "application/json")], body).into_response()
}
