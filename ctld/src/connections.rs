//! The controller's edge: the accept loop and the bounds on each client connection that
//! tonic's own settings (message sizes, streams per connection, keep-alive pings,
//! request timeouts; see `lib.rs`) do not give.
//!
//! - At most `max_connections` connections at once. At the limit a new connection
//!   has the one idle longest (no request in flight, none answered within the last
//!   second) closed at once and is served; when none is idle, it is closed. Connections asked to close
//!   keep their file until they are gone; while an eighth of `max_connections` are, a
//!   new connection waits (a second at most) for one of them to go.
//! - A connection with no request in flight for `idle_timeout_s` is closed.
//! - A reply its client does not read for `client_read_timeout_s` (the reply waits to
//!   be taken, and hyper has not asked it for more) closes its connection, and with it
//!   everything the connection buffered.
//!
//! Each connection's socket is wrapped in a [`Conn`], which checks its [`Activity`] about
//! once a second from the connection's own reads and writes and fails them when a bound
//! is passed; hyper then drops the connection. Requests find the activity of their
//! connection in their extensions ([`ConnInfo`], put there by tonic) through the
//! [`WatchLayer`], which counts them in flight and wraps their replies in [`Tracked`].
//!
//! Example: `max_connections = 2`; A has been idle 40 s, B streams a listing. C connects:
//! A is asked to close and C is served. D connects while B and C both have requests in
//! flight: D is closed at once.

use http_body::{Body, Frame, SizeHint};
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, futures::OwnedNotified, mpsc};
use tonic::codegen::http;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// How often a connection checks its bounds.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// How long a connection that has answered requests stays idle before it may be closed
/// to make room: the last reply's final frames may still wait to be written.
const ANSWERED_GRACE: Duration = Duration::from_secs(1);

/// The bounds of `[controller]` that this module enforces.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_connections: usize,
    pub idle_timeout: Duration,
    pub read_timeout: Duration,
}

/// Why a connection is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// A new connection needed its place at `max_connections`.
    Evicted,
    /// No request in flight for `idle_timeout_s`.
    Idle,
    /// A reply not read for `client_read_timeout_s`.
    Unread,
}

impl Verdict {
    fn reason(self) -> &'static str {
        match self {
            Verdict::Evicted => "idle longest when a new connection came at max_connections",
            Verdict::Idle => "idle for idle_timeout_s",
            Verdict::Unread => "a reply was not read for client_read_timeout_s",
        }
    }
}

/// What one connection is doing, shared by its socket and its requests.
#[derive(Debug)]
pub struct Activity {
    id: u64,
    peer: SocketAddr,
    state: Mutex<ActivityState>,
    evicted: AtomicBool,
    /// Wakes the connection when it is asked to close.
    evict: Arc<Notify>,
    /// Job listings in progress on the connection.
    listings: AtomicUsize,
}

#[derive(Debug)]
struct ActivityState {
    /// Requests begun and not yet done (their replies sent or dropped).
    in_flight: usize,
    /// Since when nothing is in flight.
    idle_since: Instant,
    /// Requests whose reply waits for the client to take it, and since when.
    unread: BTreeMap<u64, Instant>,
    next_request: u64,
}

impl Activity {
    fn new(id: u64, peer: SocketAddr, now: Instant) -> Activity {
        Activity {
            id,
            peer,
            state: Mutex::new(ActivityState {
                in_flight: 0,
                idle_since: now,
                unread: BTreeMap::new(),
                next_request: 0,
            }),
            evicted: AtomicBool::new(false),
            evict: Arc::new(Notify::new()),
            listings: AtomicUsize::new(0),
        }
    }

    /// Asks the connection to close, at once.
    fn ask_to_close(&self) {
        self.evicted.store(true, Ordering::Relaxed);
        self.evict.notify_one();
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ActivityState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How long nothing has been in flight, when the connection may be closed to make
    /// room: nothing in flight, and no request answered within `ANSWERED_GRACE`.
    fn evictable_for(&self, now: Instant) -> Option<Duration> {
        let s = self.state();
        let idle = now.saturating_duration_since(s.idle_since);
        (s.in_flight == 0 && (s.next_request == 0 || idle >= ANSWERED_GRACE)).then_some(idle)
    }

    /// A request begins.
    fn begin(self: &Arc<Activity>) -> Ticket {
        let mut s = self.state();
        s.in_flight += 1;
        s.next_request += 1;
        Ticket {
            activity: self.clone(),
            request: s.next_request,
        }
    }

    fn verdict(&self, now: Instant, limits: &Limits) -> Option<Verdict> {
        if self.evicted.load(Ordering::Relaxed) {
            return Some(Verdict::Evicted);
        }
        let s = self.state();
        if s.in_flight == 0 && now.saturating_duration_since(s.idle_since) >= limits.idle_timeout {
            return Some(Verdict::Idle);
        }
        let unread = s.unread.values().min()?;
        (now.saturating_duration_since(*unread) >= limits.read_timeout).then_some(Verdict::Unread)
    }
}

/// One request in flight on a connection; done when dropped.
#[derive(Debug)]
pub struct Ticket {
    activity: Arc<Activity>,
    request: u64,
}

impl Ticket {
    /// The reply has something for the client, and waits for it to be taken.
    fn waiting_for_client(&self) {
        let now = Instant::now();
        self.activity
            .state()
            .unread
            .entry(self.request)
            .or_insert(now);
    }

    /// The client took what was there (hyper asks for more).
    fn taken(&self) {
        self.activity.state().unread.remove(&self.request);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut s = self.activity.state();
        s.unread.remove(&self.request);
        s.in_flight -= 1;
        if s.in_flight == 0 {
            s.idle_since = Instant::now();
        }
    }
}

/// The connections open now.
#[derive(Debug)]
struct Registry {
    limits: Limits,
    open: Mutex<BTreeMap<u64, Arc<Activity>>>,
    next_id: AtomicU64,
    /// Notified whenever a connection is gone.
    gone: Notify,
    /// When a refused connection was last logged (refusals come in floods).
    last_refusal_logged: Mutex<Option<Instant>>,
}

/// What becomes of a new connection.
#[derive(Debug)]
enum Admission {
    Admitted(Arc<Activity>),
    /// Wait until a connection asked to close is gone, then ask again.
    Wait,
    /// Every connection has a request in flight.
    Refused,
}

impl Registry {
    fn new(limits: Limits) -> Registry {
        Registry {
            limits,
            open: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(0),
            gone: Notify::new(),
            last_refusal_logged: Mutex::new(None),
        }
    }

    /// A place for a new connection from `peer`: a free one, or the one of the
    /// connection idle longest, which is asked to close. Connections asked to close
    /// keep their file until they are gone, at most an eighth of `max_connections` of
    /// them: beyond, or when the only way out is one of them going, wait.
    fn admit(&self, peer: SocketAddr, now: Instant) -> Admission {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let max = self.limits.max_connections;
        let ceiling = max + max.div_ceil(8);
        let closing = open
            .values()
            .filter(|a| a.evicted.load(Ordering::Relaxed))
            .count();
        if open.len() - closing >= max {
            let victim = open
                .values()
                .filter(|a| !a.evicted.load(Ordering::Relaxed))
                .filter_map(|a| a.evictable_for(now).map(|idle| (idle, a.id)))
                .max();
            match victim {
                Some((_, id)) => open[&id].ask_to_close(),
                None if closing > 0 => return Admission::Wait,
                None => return Admission::Refused,
            }
        }
        if open.len() >= ceiling {
            return Admission::Wait;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity::new(id, peer, now));
        open.insert(id, activity.clone());
        Admission::Admitted(activity)
    }

    /// Admits a new connection, waiting (a second at most) for connections asked to
    /// close to go when it must.
    async fn admit_or_wait(&self, peer: SocketAddr) -> Option<Arc<Activity>> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        loop {
            let gone = self.gone.notified();
            tokio::pin!(gone);
            gone.as_mut().enable();
            match self.admit(peer, Instant::now()) {
                Admission::Admitted(activity) => return Some(activity),
                Admission::Refused => return None,
                Admission::Wait => {
                    if tokio::time::timeout_at(deadline, gone).await.is_err() {
                        return None;
                    }
                }
            }
        }
    }

    fn remove(&self, id: u64) {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        self.gone.notify_waiters();
    }

    fn log_refusal(&self, peer: SocketAddr) {
        let now = Instant::now();
        let mut last = self
            .last_refusal_logged
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if last.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(10)) {
            *last = Some(now);
            tracing::warn!(
                %peer,
                max_connections = self.limits.max_connections,
                "connection refused: every connection has a request in flight or is \
                 still closing (logged once per 10 s)"
            );
        }
    }
}

/// What a request learns of its connection (tonic puts it in the request's
/// extensions).
#[derive(Debug, Clone)]
pub struct ConnInfo {
    pub tcp: TcpConnectInfo,
    activity: Arc<Activity>,
}

impl ConnInfo {
    /// Counts a job listing in progress on this connection while the count lives.
    pub fn listing(&self) -> ListingCount {
        self.activity.listings.fetch_add(1, Ordering::Relaxed);
        ListingCount {
            activity: self.activity.clone(),
        }
    }
}

/// One job listing in progress on a connection.
#[derive(Debug)]
pub struct ListingCount {
    activity: Arc<Activity>,
}

impl ListingCount {
    /// The listings in progress on the connection now, this one included.
    pub fn rank(&self) -> usize {
        self.activity.listings.load(Ordering::Relaxed)
    }
}

impl Drop for ListingCount {
    fn drop(&mut self) {
        self.activity.listings.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A client connection's socket, which fails its reads and writes once a bound of the
/// connection is passed.
pub struct Conn {
    stream: TcpStream,
    info: ConnInfo,
    registry: Arc<Registry>,
    check: Pin<Box<tokio::time::Sleep>>,
    evicted: Pin<Box<OwnedNotified>>,
    closed: Option<Verdict>,
}

impl Conn {
    /// Checks the bounds when a check is due; registers the next check with `cx`.
    fn watch(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if let Some(verdict) = self.closed {
            return Err(io::Error::new(io::ErrorKind::TimedOut, verdict.reason()));
        }
        let evicted = self.evicted.as_mut().poll(cx).is_ready();
        while evicted || self.check.as_mut().poll(cx).is_ready() {
            let activity = &self.info.activity;
            if let Some(verdict) = activity.verdict(Instant::now(), &self.registry.limits) {
                tracing::info!(peer = %activity.peer, reason = verdict.reason(), "connection closed");
                self.closed = Some(verdict);
                return Err(io::Error::new(io::ErrorKind::TimedOut, verdict.reason()));
            }
            let next = tokio::time::Instant::now() + CHECK_EVERY;
            self.check.as_mut().reset(next);
        }
        Ok(())
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.registry.remove(self.info.activity.id);
    }
}

impl Connected for Conn {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> ConnInfo {
        self.info.clone()
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.watch(cx)?;
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.watch(cx)?;
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.watch(cx)?;
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.watch(cx)?;
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Accepts connections within the limits and hands them to the server, until the
/// server stops taking them.
pub fn incoming(
    listener: TcpListener,
    limits: Limits,
) -> tonic::codegen::tokio_stream::wrappers::ReceiverStream<io::Result<Conn>> {
    let registry = Arc::new(Registry::new(limits));
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                // The server stopped: close the listening socket at once.
                () = tx.closed() => return,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors or memory: wait for some to come back rather
                    // than spin on the same error.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let Some(activity) = registry.admit_or_wait(peer).await else {
                registry.log_refusal(peer);
                continue;
            };
            let _ = stream.set_nodelay(true);
            let tcp = TcpConnectInfo {
                local_addr: stream.local_addr().ok(),
                remote_addr: Some(peer),
            };
            let conn = Conn {
                stream,
                evicted: Box::pin(activity.evict.clone().notified_owned()),
                info: ConnInfo { tcp, activity },
                registry: registry.clone(),
                check: Box::pin(tokio::time::sleep(CHECK_EVERY)),
                closed: None,
            };
            if tx.send(Ok(conn)).await.is_err() {
                return;
            }
        }
    });
    tonic::codegen::tokio_stream::wrappers::ReceiverStream::new(rx)
}

/// Counts each request in flight on its connection and tracks whether its reply waits
/// for the client.
#[derive(Debug, Clone, Copy, Default)]
pub struct WatchLayer;

impl<S> tower_layer::Layer<S> for WatchLayer {
    type Service = Watched<S>;

    fn layer(&self, inner: S) -> Watched<S> {
        Watched { inner }
    }
}

/// The service of [`WatchLayer`].
#[derive(Debug, Clone)]
pub struct Watched<S> {
    inner: S,
}

impl<S, ReqBody, ResBody> tonic::codegen::Service<http::Request<ReqBody>> for Watched<S>
where
    S: tonic::codegen::Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    ResBody: Body + Unpin,
{
    type Response = http::Response<Tracked<ResBody>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<ReqBody>) -> Self::Future {
        // Under TLS (`[tls]`), tonic wraps what the connection says of itself.
        let info = req.extensions().get::<ConnInfo>().cloned().or_else(|| {
            req.extensions()
                .get::<tonic::transport::server::TlsConnectInfo<ConnInfo>>()
                .map(|tls| tls.get_ref().clone())
        });
        let ticket = info.map(|info| {
            // As for a plain TCP connection: `Request::remote_addr` finds it, and the
            // services find the connection's own.
            req.extensions_mut().insert(info.tcp.clone());
            req.extensions_mut().insert(info.clone());
            info.activity.begin()
        });
        let reply = self.inner.call(req);
        Box::pin(async move {
            let reply = reply.await?;
            if let Some(t) = &ticket {
                t.waiting_for_client();
            }
            Ok(reply.map(|inner| Tracked { inner, ticket }))
        })
    }
}

/// A reply body that marks its request done when dropped, and waiting for the client
/// between the moment it hands a frame over and the moment hyper asks for the next
/// (hyper asks only when the client's flow-control window has room).
pub struct Tracked<B> {
    inner: B,
    ticket: Option<Ticket>,
}

impl<B: Body + Unpin> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        if let Some(t) = &self.ticket {
            t.taken();
        }
        let frame = Pin::new(&mut self.inner).poll_frame(cx);
        match &frame {
            Poll::Ready(Some(Ok(_))) => {
                if let Some(t) = &self.ticket {
                    t.waiting_for_client();
                }
            }
            Poll::Ready(_) => self.ticket = None,
            Poll::Pending => {}
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize) -> Limits {
        Limits {
            max_connections: max,
            idle_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(5),
        }
    }

    fn admitted(r: &Registry, now: Instant) -> Arc<Activity> {
        match r.admit(peer(), now) {
            Admission::Admitted(a) => a,
            other => panic!("{other:?}"),
        }
    }

    fn peer() -> SocketAddr {
        "127.0.0.1:1".parse().unwrap()
    }

    #[test]
    fn at_the_limit_the_connection_idle_longest_makes_room() {
        let r = Registry::new(limits(2));
        let now = Instant::now();
        let a = admitted(&r, now);
        let b = admitted(&r, now);
        let busy = b.begin();
        // A is idle, B busy: C takes A's place, A is asked to close.
        let c = admitted(&r, now);
        assert!(a.evicted.load(Ordering::Relaxed));
        assert_eq!(a.verdict(now, &r.limits), Some(Verdict::Evicted));
        // At the limit with only C idle: D asks C to close, but A and C would be more
        // than an eighth (one of two) closing: D waits until one of them is gone.
        assert!(matches!(r.admit(peer(), now), Admission::Wait));
        assert!(c.evicted.load(Ordering::Relaxed));
        r.remove(a.id);
        let d = admitted(&r, now);
        r.remove(c.id);
        // B and D have requests in flight, none is closing: E is refused.
        let answered = d.begin();
        assert!(matches!(r.admit(peer(), now), Admission::Refused));
        // D has just answered: its last reply may not be written yet, so it is left
        // alone a second.
        drop(answered);
        assert!(matches!(
            r.admit(peer(), Instant::now()),
            Admission::Refused
        ));
        let _f = admitted(&r, Instant::now() + ANSWERED_GRACE);
        assert!(d.evicted.load(Ordering::Relaxed));
        assert!(!b.evicted.load(Ordering::Relaxed));
        drop(busy);
    }

    #[test]
    fn idle_and_unread_connections_are_judged() {
        let l = limits(4);
        let start = Instant::now();
        let a = Arc::new(Activity::new(0, peer(), start));
        assert_eq!(a.verdict(start, &l), None);
        assert_eq!(a.verdict(start + l.idle_timeout, &l), Some(Verdict::Idle));
        let t = a.begin();
        // In flight: not idle, however long it takes.
        assert_eq!(a.verdict(start + l.idle_timeout * 3, &l), None);
        t.waiting_for_client();
        let later = Instant::now() + l.read_timeout;
        assert_eq!(a.verdict(later, &l), Some(Verdict::Unread));
        t.taken();
        assert_eq!(a.verdict(later, &l), None);
        drop(t);
        let idle_from = Instant::now();
        assert_eq!(a.verdict(idle_from + l.idle_timeout / 2, &l), None);
        assert_eq!(
            a.verdict(idle_from + l.idle_timeout, &l),
            Some(Verdict::Idle)
        );
    }
}
