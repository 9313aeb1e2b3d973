//! One HTTP/2 connection to the controller: `h2` over a blocking socket, as the transport
//! of tonic's client (`client::Ctld`).
//!
//! A command is a new process that makes one or two gRPC calls, so what costs most is
//! every turn the controller must take, and the runtime's I/O driver (over a millisecond
//! a call in an A/B run, see `docs/benchmarks.md`). So the socket blocks and the command's runtime
//! has no I/O driver; `h2` does all of HTTP/2 and HPACK, and this module only decides
//! when it may read. Nothing spawns a task: a call drives the connection itself while it
//! waits, in *turns* of `h2`'s connection future:
//!
//! - a turn with reads closed lets `h2` write what it has queued, buffered until its
//!   flush so that it leaves in one `write`;
//! - a turn with one read open lets it block in one `read` of the socket, decode what
//!   came, and write what that calls for (SETTINGS ACK, WINDOW_UPDATE, more of a large
//!   body once the server's window allows).
//!
//! For example, `sbatch job.sh` queues the connection preface, SETTINGS, WINDOW_UPDATE,
//! the request's HEADERS and its DATA; the first turn writes them together, without
//! waiting for the server's SETTINGS (HTTP/2 allows that). The response is still
//! pending, so turns with a read follow: one brings the server's SETTINGS, which `h2`
//! acknowledges in the same turn, the next the reply's HEADERS, DATA and trailers (or
//! one read brings all of it). The response is ready, and the call reads its body from
//! what `h2` has buffered.
//!
//! With `[tls]`, the socket carries TLS (rustls over the same blocking socket, checked
//! against the cluster's CA and the controller's host): its handshake happens within
//! the first turn's write, and each read decrypts what came.
//!
//! The socket's reads and writes time out (`Deadlines`): the read deadline is on
//! progress, each read waits at most that long, so a long streamed listing can take
//! longer as a whole. A call holds the thread until its reply comes, which suits a
//! command line.

use bytes::Bytes;
use http_body_util::BodyExt;
use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::ReadBuf;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Slurm's words for a controller that stopped answering
/// (`SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT`).
pub const TIMED_OUT: &str = "Socket timed out on send/recv operation";

/// How long a command waits for the controller.
#[derive(Clone, Copy, Debug)]
pub struct Deadlines {
    /// For the host name's lookup, then for the TCP connection to be accepted.
    pub connect: Duration,
    /// For each read or write of the socket to make progress.
    pub read: Duration,
}

impl Deadlines {
    /// The command line's: 5 s to connect, 60 s of silence within a call.
    pub const COMMAND: Deadlines = Deadlines {
        connect: Duration::from_secs(5),
        read: Duration::from_secs(60),
    };
}

/// The window this client grants the server, per stream and for the connection: replies
/// of up to this many bytes flow without a WINDOW_UPDATE (a listing of 100,000 jobs is a
/// few MB).
const RECEIVE_WINDOW: u32 = (1 << 31) - 1;

/// A cheap, cloneable handle to one connection; calls through it share the socket.
#[derive(Clone)]
pub struct Connection {
    sender: h2::client::SendRequest<Bytes>,
    shared: Arc<Mutex<Shared>>,
}

struct Shared {
    connection: h2::client::Connection<BlockingSocket, Bytes>,
    /// Whether the next read of the socket may block (one read, then it closes again).
    read_open: Arc<AtomicBool>,
    /// Set when a read or write ran past its deadline.
    timed_out: Arc<AtomicBool>,
    /// Why the connection carries nothing more; `h2`'s future has ended.
    failure: Option<Failure>,
}

#[derive(Clone, Debug)]
enum Failure {
    TimedOut,
    Unavailable(String),
}

impl Failure {
    fn status(&self) -> BoxError {
        Box::new(match self {
            Failure::TimedOut => tonic::Status::deadline_exceeded(TIMED_OUT),
            Failure::Unavailable(reason) => tonic::Status::unavailable(reason),
        })
    }

    fn of(e: &h2::Error) -> Failure {
        let reason = if let Some(reason) = e.reason().filter(|_| e.is_reset()) {
            format!("the controller reset the call ({reason})")
        } else if e.is_go_away() {
            "the controller is closing the connection".to_string()
        } else if let Some(io) = e.get_io() {
            format!("connection to the controller lost: {io}")
        } else {
            format!("protocol error from the controller: {e}")
        };
        Failure::Unavailable(reason)
    }
}

impl Connection {
    /// Connects to `addr` (`host:port`), with TLS where `tls` is given. Nothing is
    /// written until the first call.
    pub async fn open(
        addr: &str,
        deadlines: Deadlines,
        tls: Option<&auth::tls::Tls>,
    ) -> std::io::Result<Connection> {
        let tcp = connect(addr, deadlines.connect)?;
        tcp.set_nodelay(true)?;
        tcp.set_read_timeout(Some(deadlines.read))?;
        tcp.set_write_timeout(Some(deadlines.read))?;
        let socket = match tls {
            None => Socket::Plain(tcp),
            Some(tls) => {
                let config = tls.rustls_client().map_err(std::io::Error::other)?;
                let name = rustls_pki_types::ServerName::try_from(auth::tls::host_of(addr))
                    .map_err(std::io::Error::other)?;
                let session =
                    rustls::ClientConnection::new(config, name).map_err(std::io::Error::other)?;
                Socket::Tls(Box::new(rustls::StreamOwned::new(session, tcp)))
            }
        };
        let read_open = Arc::new(AtomicBool::new(false));
        let timed_out = Arc::new(AtomicBool::new(false));
        let io = BlockingSocket {
            socket,
            output: Vec::with_capacity(4096),
            read_open: read_open.clone(),
            timed_out: timed_out.clone(),
        };
        // The handshake only queues the preface: it is ready at once.
        let (sender, connection) = h2::client::Builder::new()
            .enable_push(false)
            .initial_window_size(RECEIVE_WINDOW)
            .initial_connection_window_size(RECEIVE_WINDOW)
            .handshake(io)
            .await
            .map_err(std::io::Error::other)?;
        Ok(Connection {
            sender,
            shared: Arc::new(Mutex::new(Shared {
                connection,
                read_open,
                timed_out,
                failure: None,
            })),
        })
    }

    /// Polls `ready` until it is ready, driving the connection in between: first a turn
    /// that only writes, then turns of one read each.
    fn drive<T>(
        &self,
        cx: &mut Context<'_>,
        mut ready: impl FnMut(&mut Context<'_>) -> Poll<Result<T, h2::Error>>,
    ) -> Poll<Result<T, BoxError>> {
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        let mut read = false;
        loop {
            match ready(cx) {
                Poll::Ready(Ok(value)) => return Poll::Ready(Ok(value)),
                // A broken connection fails its streams too; its own reason says more.
                Poll::Ready(Err(e)) => {
                    let failure = shared.failure.clone().unwrap_or_else(|| Failure::of(&e));
                    return Poll::Ready(Err(failure.status()));
                }
                Poll::Pending => {}
            }
            if let Err(failure) = shared.turn(cx, read) {
                return Poll::Ready(Err(failure.status()));
            }
            read = true;
        }
    }

    /// Sends a request and waits for the head of its reply; the reply's body is read as
    /// the caller polls it.
    async fn request(
        &self,
        head: http::request::Parts,
        body: Bytes,
    ) -> Result<http::Response<ReplyBody>, BoxError> {
        let mut sender = self.sender.clone();
        std::future::poll_fn(|cx| self.drive(cx, |cx| sender.poll_ready(cx))).await?;
        let unsent = |e: h2::Error| Failure::of(&e).status();
        let request = http::Request::from_parts(head, ());
        let (mut response, mut stream) = sender
            .send_request(request, body.is_empty())
            .map_err(unsent)?;
        if !body.is_empty() {
            // h2 holds what the server's window does not take yet and sends it as the
            // window grows, in the turns below.
            stream.send_data(body, true).map_err(unsent)?;
        }
        let response =
            std::future::poll_fn(|cx| self.drive(cx, |cx| Pin::new(&mut response).poll(cx)))
                .await?;
        Ok(response.map(|recv| ReplyBody {
            recv,
            connection: self.clone(),
            data_done: false,
            done: false,
        }))
    }
}

impl Shared {
    /// One poll of `h2`'s connection future, with one read of the socket allowed or none.
    fn turn(&mut self, cx: &mut Context<'_>, read: bool) -> Result<(), Failure> {
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        self.read_open.store(read, Ordering::Relaxed);
        let polled = Pin::new(&mut self.connection).poll(cx);
        let unread = self.read_open.swap(false, Ordering::Relaxed);
        let failure = match polled {
            Poll::Pending if read && unread => {
                // It would only spin: nothing can change without a read.
                Failure::Unavailable("the connection to the controller stalled".into())
            }
            Poll::Pending => return Ok(()),
            Poll::Ready(Ok(())) => {
                Failure::Unavailable("the controller closed the connection".into())
            }
            Poll::Ready(Err(_)) if self.timed_out.load(Ordering::Relaxed) => Failure::TimedOut,
            Poll::Ready(Err(e)) => Failure::of(&e),
        };
        self.failure = Some(failure.clone());
        Err(failure)
    }
}

/// Connects to the first address of `addr` that accepts within `deadline` (the name's
/// lookup has a `deadline` of its own).
fn connect(addr: &str, deadline: Duration) -> std::io::Result<TcpStream> {
    let mut last = None;
    for candidate in resolve(addr, deadline)? {
        match TcpStream::connect_timeout(&candidate, deadline) {
            Ok(socket) => return Ok(socket),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, "no address to connect to")
    }))
}

/// The addresses of `addr` (`host:port`). A literal `ip:port` needs no lookup. A host
/// name is looked up on a thread of its own, since std's lookup (`getaddrinfo`) has no
/// deadline: a resolver that does not answer costs at most `deadline`, and the thread
/// is left to end on its own (the command exits soon after).
fn resolve(addr: &str, deadline: Duration) -> std::io::Result<Vec<SocketAddr>> {
    if let Ok(literal) = addr.parse::<SocketAddr>() {
        return Ok(vec![literal]);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let name = addr.to_string();
    std::thread::spawn(move || {
        let _ = tx.send(name.to_socket_addrs().map(Iterator::collect));
    });
    rx.recv_timeout(deadline).unwrap_or_else(|_| {
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no address for {addr} within {} s", deadline.as_secs()),
        ))
    })
}

/// The transport of tonic's client (`client::Ctld`).
impl tower_service::Service<http::Request<tonic::body::Body>> for Connection {
    type Response = http::Response<ReplyBody>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        let connection = self.clone();
        Box::pin(async move {
            let (head, body) = req.into_parts();
            // Every request of the CLI is one message, encoded as soon as it is polled.
            let body = body.collect().await?.to_bytes();
            connection.request(head, body).await
        })
    }
}

/// The body of a reply, read from the connection as it is polled.
pub struct ReplyBody {
    recv: h2::RecvStream,
    connection: Connection,
    /// The data has ended; the trailers are next.
    data_done: bool,
    done: bool,
}

impl http_body::Body for ReplyBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        let (recv, data_done) = (&mut this.recv, &mut this.data_done);
        let frame = this.connection.drive(cx, |cx| {
            if !*data_done {
                match recv.poll_data(cx) {
                    Poll::Ready(Some(Ok(data))) => {
                        // What the caller took may be sent again: the server's window.
                        let _ = recv.flow_control().release_capacity(data.len());
                        return Poll::Ready(Ok(Some(http_body::Frame::data(data))));
                    }
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                    Poll::Ready(None) => *data_done = true,
                    Poll::Pending => return Poll::Pending,
                }
            }
            recv.poll_trailers(cx)
                .map_ok(|trailers| trailers.map(http_body::Frame::trailers))
        });
        match frame {
            Poll::Ready(Ok(Some(frame))) if frame.is_data() => Poll::Ready(Some(Ok(frame))),
            Poll::Ready(result) => {
                this.done = true;
                Poll::Ready(result.transpose())
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// A connected socket: plain, or carrying TLS.
enum Socket {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Socket {
    fn shutdown_write(&mut self) {
        match self {
            Socket::Plain(s) => {
                let _ = s.shutdown(std::net::Shutdown::Write);
            }
            Socket::Tls(s) => {
                s.conn.send_close_notify();
                let _ = s.flush();
                let _ = s.sock.shutdown(std::net::Shutdown::Write);
            }
        }
    }
}

/// An error of the TLS layer says so (`TLS: invalid peer certificate: UnknownIssuer`),
/// so that a command can tell it from a controller that is not there.
fn tls_error(e: std::io::Error) -> std::io::Error {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(tls) => std::io::Error::new(e.kind(), format!("{TLS_FAILURE}{tls}")),
        None => e,
    }
}

/// How a failure of the TLS layer begins.
pub const TLS_FAILURE: &str = "TLS: ";

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Socket::Plain(s) => s.read(buf),
            Socket::Tls(s) => s.read(buf).map_err(tls_error),
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Socket::Plain(s) => s.write(buf),
            Socket::Tls(s) => s.write(buf).map_err(tls_error),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Socket::Plain(s) => s.flush(),
            Socket::Tls(s) => s.flush().map_err(tls_error),
        }
    }
}

/// The socket under `h2`. A read blocks, and only when the connection's turn allows it:
/// otherwise it is pending, and the call that drives the connection polls again (no waker
/// is needed, nothing else runs meanwhile). Writes are kept until `h2` flushes them,
/// so that what it queues in a turn leaves in one `write`.
struct BlockingSocket {
    socket: Socket,
    output: Vec<u8>,
    read_open: Arc<AtomicBool>,
    timed_out: Arc<AtomicBool>,
}

impl BlockingSocket {
    /// A socket's deadline passed (`SO_RCVTIMEO` and `SO_SNDTIMEO` report `EAGAIN`).
    fn timeout(&self, e: std::io::Error) -> std::io::Error {
        if matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ) {
            self.timed_out.store(true, Ordering::Relaxed);
            return std::io::Error::new(std::io::ErrorKind::TimedOut, TIMED_OUT);
        }
        e
    }
}

impl tokio::io::AsyncRead for BlockingSocket {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if !this.read_open.swap(false, Ordering::Relaxed) {
            return Poll::Pending;
        }
        loop {
            match this.socket.read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(this.timeout(e))),
            }
        }
    }
}

impl tokio::io::AsyncWrite for BlockingSocket {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.get_mut().output.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let output = &mut self.get_mut().output;
        let before = output.len();
        for buf in bufs {
            output.extend_from_slice(buf);
        }
        Poll::Ready(Ok(output.len() - before))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.output.is_empty() {
            return Poll::Ready(Ok(()));
        }
        let written = this
            .socket
            .write_all(&this.output)
            .and_then(|()| this.socket.flush());
        this.output.clear();
        Poll::Ready(written.map_err(|e| this.timeout(e)))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        std::task::ready!(self.as_mut().poll_flush(cx))?;
        self.socket.shutdown_write();
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{grpc_message, serve_h2};
    use prost::Message;
    use proto::v1::{self, ctld_client::CtldClient};
    use std::net::TcpListener;
    use std::time::Instant;

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    const DATA: u8 = 0x0;
    const HEADERS: u8 = 0x1;
    const RST_STREAM: u8 = 0x3;
    const SETTINGS: u8 = 0x4;
    const GOAWAY: u8 = 0x7;
    const END_STREAM: u8 = 0x1;
    const END_HEADERS: u8 = 0x4;

    /// For tests of a peer that answers: generous, the machine may be busy.
    const PATIENT: Deadlines = Deadlines {
        connect: Duration::from_secs(5),
        read: Duration::from_secs(30),
    };
    /// For tests of a peer that goes silent.
    const QUICK: Deadlines = Deadlines {
        connect: Duration::from_secs(5),
        read: Duration::from_millis(300),
    };

    /// The commands' runtime, without an I/O driver.
    fn runtime() -> tokio::runtime::Runtime {
        crate::client::runtime()
    }

    async fn client(addr: &str, deadlines: Deadlines) -> CtldClient<Connection> {
        let connection = Connection::open(addr, deadlines, None).await.unwrap();
        CtldClient::with_origin(connection, "http://controller".parse().unwrap())
    }

    fn submit(script: String) -> v1::SubmitJobRequest {
        v1::SubmitJobRequest {
            spec: Some(v1::JobSpec {
                script,
                ..Default::default()
            }),
            test_only: false,
            het_components: Vec::new(),
        }
    }

    fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
        out.extend_from_slice(&[kind, flags]);
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
    }

    /// A header field as an HPACK literal with a new name, neither indexed nor Huffman
    /// coded (RFC 7541 §6.2.2).
    fn literal(block: &mut Vec<u8>, name: &str, value: &str) {
        block.extend_from_slice(&[0, name.len() as u8]);
        block.extend_from_slice(name.as_bytes());
        block.push(value.len() as u8);
        block.extend_from_slice(value.as_bytes());
    }

    /// The server's side of one connection, read and written frame by frame by a test.
    struct Peer {
        socket: TcpStream,
        /// Bytes read and not yet taken as frames; the preface is taken first.
        input: Vec<u8>,
        preface_taken: bool,
    }

    /// A frame the client sent: kind, flags, stream.
    type Sent = (u8, u8, u32);

    impl Peer {
        /// Takes the whole frames at the start of `input`.
        fn take_frames(&mut self) -> Vec<Sent> {
            if !self.preface_taken && self.input.len() >= PREFACE.len() {
                assert!(self.input.starts_with(PREFACE));
                self.input.drain(..PREFACE.len());
                self.preface_taken = true;
            }
            let mut frames = Vec::new();
            while self.preface_taken && self.input.len() >= 9 {
                let head = &self.input[..9];
                let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
                if self.input.len() < 9 + len {
                    break;
                }
                let stream = u32::from_be_bytes(head[5..9].try_into().unwrap());
                frames.push((head[3], head[4], stream));
                self.input.drain(..9 + len);
            }
            frames
        }

        /// One read of the socket.
        fn read(&mut self) {
            let mut buf = vec![0u8; 1 << 16];
            let n = self.socket.read(&mut buf).unwrap();
            assert!(n > 0, "the client closed the connection");
            self.input.extend_from_slice(&buf[..n]);
        }

        /// What one read brings, which must be whole frames.
        fn read_once(&mut self) -> Vec<Sent> {
            self.read();
            let frames = self.take_frames();
            assert!(self.input.is_empty(), "a frame was cut after {frames:?}");
            frames
        }

        /// Reads frames up to one that `last` accepts; gives it.
        fn read_until(&mut self, last: impl Fn(&Sent) -> bool) -> Sent {
            loop {
                if let Some(frame) = self.take_frames().into_iter().find(&last) {
                    return frame;
                }
                self.read();
            }
        }

        /// Reads up to the end of a request; gives its stream.
        fn read_request(&mut self) -> u32 {
            self.read_until(|&(kind, flags, _)| {
                matches!(kind, HEADERS | DATA) && flags & END_STREAM != 0
            })
            .2
        }

        fn write(&mut self, frames: &[(u8, u8, u32, Vec<u8>)]) {
            let mut out = Vec::new();
            for (kind, flags, stream, payload) in frames {
                frame(&mut out, *kind, *flags, *stream, payload);
            }
            self.socket.write_all(&out).unwrap();
        }

        /// The server's SETTINGS (its defaults), the first frame it sends.
        fn settings() -> (u8, u8, u32, Vec<u8>) {
            (SETTINGS, 0, 0, Vec::new())
        }

        /// A whole gRPC reply on `stream`: a job id.
        fn reply(stream: u32, job_id: u32) -> Vec<(u8, u8, u32, Vec<u8>)> {
            let message = v1::SubmitJobReply {
                job_id,
                ..Default::default()
            };
            let mut head = vec![0x88]; // :status 200, indexed
            literal(&mut head, "content-type", "application/grpc");
            let mut trailers = Vec::new();
            literal(&mut trailers, "grpc-status", "0");
            vec![
                (HEADERS, END_HEADERS, stream, head),
                (DATA, 0, stream, grpc_message(&message.encode_to_vec())),
                (HEADERS, END_HEADERS | END_STREAM, stream, trailers),
            ]
        }

        /// Reads until the client closes the connection.
        fn drain(&mut self) {
            let mut buf = vec![0u8; 1 << 16];
            while self.socket.read(&mut buf).is_ok_and(|n| n > 0) {}
        }
    }

    /// Starts a server that runs `script` on its first connection; gives the address.
    fn serve(
        script: impl FnOnce(&mut Peer) + Send + 'static,
    ) -> (String, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let handle = std::thread::spawn(move || {
            let (socket, _) = listener.accept().unwrap();
            script(&mut Peer {
                socket,
                input: Vec::new(),
                preface_taken: false,
            });
        });
        (addr, handle)
    }

    #[test]
    fn a_call_is_one_write_and_a_reset_after_a_whole_reply_is_no_error() {
        let (addr, server) = serve(|peer| {
            // Everything the call sends arrives at once, the request's last frame too.
            let frames = peer.read_once();
            assert_eq!(frames.first().map(|f| f.0), Some(SETTINGS), "{frames:?}");
            assert!(frames.iter().any(|f| f.0 == HEADERS), "{frames:?}");
            assert_eq!(frames.last(), Some(&(DATA, END_STREAM, 1)), "{frames:?}");
            // A complete reply, then RST_STREAM(NO_ERROR) (RFC 9113 §8.1).
            let mut frames = vec![Peer::settings()];
            frames.extend(Peer::reply(1, 42));
            frames.push((RST_STREAM, 0, 1, 0u32.to_be_bytes().to_vec()));
            peer.write(&frames);
            peer.drain();
        });
        let reply = runtime().block_on(async {
            let mut client = client(&addr, PATIENT).await;
            client.submit_job(submit("job".into())).await
        });
        assert_eq!(reply.unwrap().into_inner().job_id, 42);
        server.join().unwrap();
    }

    #[test]
    fn a_reply_before_the_whole_request_then_a_reset_is_no_error() {
        let (addr, server) = serve(|peer| {
            // The first DATA of a body larger than the default window, then the answer.
            peer.read_until(|&(kind, _, _)| kind == DATA);
            let mut frames = vec![Peer::settings()];
            frames.extend(Peer::reply(1, 7));
            frames.push((RST_STREAM, 0, 1, 0u32.to_be_bytes().to_vec()));
            peer.write(&frames);
            peer.drain();
        });
        let reply = runtime().block_on(async {
            let mut client = client(&addr, PATIENT).await;
            client.submit_job(submit("x".repeat(200_000))).await
        });
        assert_eq!(reply.unwrap().into_inner().job_id, 7);
        server.join().unwrap();
    }

    #[test]
    fn a_large_script_waits_for_the_servers_window() {
        const SIZE: usize = 2 << 20;
        let (addr, server) = serve_h2(0, |path, body| {
            assert_eq!(path, "/drover.v1.Ctld/SubmitJob");
            let request = v1::SubmitJobRequest::decode(&body[5..]).unwrap();
            let script = request.spec.unwrap().script;
            assert!(script.bytes().all(|b| b == b'#'));
            vec![
                v1::SubmitJobReply {
                    job_id: script.len() as u32,
                    ..Default::default()
                }
                .encode_to_vec(),
            ]
        });
        let reply = runtime().block_on(async {
            let mut client = client(&addr, PATIENT).await;
            let first = client.submit_job(submit("#".repeat(SIZE))).await;
            // The connection carries the next call after it.
            let second = client.submit_job(submit("##".into())).await;
            (first, second)
        });
        assert_eq!(reply.0.unwrap().into_inner().job_id, SIZE as u32);
        assert_eq!(reply.1.unwrap().into_inner().job_id, 2);
        server.join().unwrap();
    }

    #[test]
    fn a_streamed_listing_arrives_whole_and_in_order() {
        let sizes = [10usize, 3_000_000, 0, 20];
        let (addr, server) = serve_h2(0, move |path, _| {
            assert_eq!(path, "/drover.v1.Ctld/ListJobSummaries");
            sizes
                .iter()
                .enumerate()
                .map(|(i, &size)| {
                    v1::ListJobsReply {
                        now: i as i64,
                        strings: vec!["s".repeat(size)],
                        ..Default::default()
                    }
                    .encode_to_vec()
                })
                .collect()
        });
        let chunks = runtime().block_on(async {
            let mut client = client(&addr, PATIENT)
                .await
                .max_decoding_message_size(16 << 20);
            let mut stream = client
                .list_job_summaries(v1::ListJobsRequest::default())
                .await
                .unwrap()
                .into_inner();
            let mut chunks = Vec::new();
            while let Some(chunk) = stream.message().await.unwrap() {
                chunks.push((chunk.now, chunk.strings[0].len()));
            }
            chunks
        });
        assert_eq!(chunks, [(0, 10), (1, 3_000_000), (2, 0), (3, 20)]);
        server.join().unwrap();
    }

    /// A call to a peer that runs `script`, then a second call on the same connection:
    /// the job ids or the statuses.
    fn two_calls(
        script: impl FnOnce(&mut Peer) + Send + 'static,
    ) -> [Result<u32, tonic::Status>; 2] {
        let (addr, server) = serve(script);
        let replies = runtime().block_on(async {
            let mut client = client(&addr, PATIENT).await;
            let mut replies = Vec::new();
            for script in ["a", "b"] {
                let reply = client.submit_job(submit(script.into())).await;
                replies.push(reply.map(|r| r.into_inner().job_id));
            }
            replies
        });
        server.join().unwrap();
        replies.try_into().unwrap()
    }

    #[test]
    fn a_reset_a_goaway_or_a_closed_socket_fail_the_call_as_unavailable() {
        let [reset, after] = two_calls(|peer| {
            let first = peer.read_request();
            peer.write(&[
                Peer::settings(),
                (RST_STREAM, 0, first, 2u32.to_be_bytes().to_vec()),
            ]);
            // A reset call leaves the connection usable.
            let second = peer.read_request();
            peer.write(&Peer::reply(second, 9));
            peer.drain();
        });
        let reset = reset.unwrap_err();
        assert_eq!(reset.code(), tonic::Code::Unavailable, "{reset:?}");
        assert!(reset.message().contains("reset the call"), "{reset:?}");
        assert_eq!(after.unwrap(), 9);

        let [goaway, after] = two_calls(|peer| {
            peer.read_request();
            let mut payload = 0u32.to_be_bytes().to_vec();
            payload.extend_from_slice(&0u32.to_be_bytes());
            peer.write(&[Peer::settings(), (GOAWAY, 0, 0, payload)]);
            peer.drain();
        });
        for status in [goaway.unwrap_err(), after.unwrap_err()] {
            assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
            assert!(status.message().contains("connection"), "{status:?}");
        }

        let [closed, after] = two_calls(|peer| {
            peer.read_request();
        });
        for status in [closed.unwrap_err(), after.unwrap_err()] {
            assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
        }
    }

    #[test]
    fn a_controller_that_accepts_and_never_answers_times_out() {
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let (addr, server) = serve(move |peer| {
            peer.read_request();
            // Silent, with the connection open, until the test is over.
            let _ = wait.recv();
        });
        let started = Instant::now();
        let status = runtime().block_on(async {
            let mut client = client(&addr, QUICK).await;
            client.submit_job(submit("job".into())).await.unwrap_err()
        });
        let waited = started.elapsed();
        done.send(()).unwrap();
        server.join().unwrap();
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
        assert_eq!(status.message(), TIMED_OUT);
        assert!(waited >= QUICK.read, "{waited:?}");
        assert!(waited < Duration::from_secs(10), "{waited:?}");
    }

    #[test]
    fn a_host_name_is_looked_up_and_a_literal_address_is_not() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let literal = format!("127.0.0.1:{port}");
        assert_eq!(
            resolve(&literal, QUICK.connect).unwrap(),
            [literal.parse::<SocketAddr>().unwrap()]
        );
        let named = resolve(&format!("localhost:{port}"), QUICK.connect).unwrap();
        assert!(named.iter().all(|a| a.port() == port), "{named:?}");
        assert!(named.iter().any(|a| a.ip().is_loopback()), "{named:?}");
        assert!(resolve("no port", QUICK.connect).is_err());
    }

    #[test]
    fn a_port_nobody_listens_on_fails_to_connect() {
        let addr = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().to_string()
        };
        let opened = runtime().block_on(Connection::open(&addr, QUICK, None));
        let e = opened.err().expect("nothing listens");
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
    }
}
