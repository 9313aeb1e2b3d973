//! One HTTP/2 connection to the controller, spoken directly over a blocking socket.
//!
//! A command is a new process that makes one or two gRPC calls, so what costs most is
//! not the bytes but every turn the controller must take. This connection makes a call
//! one write and one read: the connection preface, the client's SETTINGS, the request's
//! HEADERS and its DATA leave in a single `write`, without waiting for the server's
//! SETTINGS first (HTTP/2 allows that), and the reply is read as it comes.
//!
//! For example, `sbatch job.sh` writes
//!
//! ```text
//! PRI * HTTP/2.0 ... | SETTINGS (no push, 2 GiB windows) | WINDOW_UPDATE 0
//!   | HEADERS 1 (POST /drover.v1.Ctld/SubmitJob) | DATA 1 END_STREAM (the job)
//! ```
//!
//! and reads `SETTINGS | HEADERS 1 (:status 200) | DATA 1 | HEADERS 1 END_STREAM
//! (grpc-status 0)`. The server's SETTINGS are acknowledged with the next write, or just
//! before the socket closes.
//!
//! Everything a unary or server-streaming call needs is here: flow control on what is
//! sent (a large script waits for the server's window), CONTINUATION frames, padding,
//! PING, RST_STREAM and GOAWAY, and several streams on one connection (a reply's data
//! that arrives while another call is read waits in its stream's queue). The socket
//! blocks: a call holds the thread until its reply begins, which suits a command line.
//! Header blocks are decoded and encoded by [`crate::hpack`].

use crate::hpack;
use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PUSH_PROMISE: u8 = 0x5;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
const SETTINGS_ENABLE_PUSH: u16 = 0x2;
const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
const CANCEL: u32 = 0x8;
/// The window every stream and the connection start with, for both sides.
const DEFAULT_WINDOW: i64 = 65_535;
/// The window this client grants the server: replies of up to this many bytes flow
/// without a WINDOW_UPDATE (a listing of 100,000 jobs is a few MB).
const RECEIVE_WINDOW: i64 = (1 << 31) - 1;
/// What the server may have sent before the client tops its windows up again.
const RECEIVE_REFILL: i64 = 1 << 30;
/// The largest frame the client sends, and the server's default limit.
const DEFAULT_MAX_FRAME: usize = 16_384;

/// A cheap, cloneable handle to one connection; calls through it share the socket.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    socket: TcpStream,
    /// Bytes read from the socket and not yet taken as frames.
    input: BytesMut,
    /// Frames waiting for the next write (the preface, acknowledgements).
    output: Vec<u8>,
    decoder: hpack::Decoder,
    next_stream: u32,
    streams: HashMap<u32, Stream>,
    /// A header block in progress: its stream, its bytes, whether it ends the stream.
    header_block: Option<(u32, Vec<u8>, bool)>,
    send_window: i64,
    /// The server's SETTINGS_INITIAL_WINDOW_SIZE (each new stream's send window).
    stream_send_window: i64,
    max_frame: usize,
    received: i64,
    /// Why the connection can carry nothing more (a failed socket, a protocol error).
    broken: Option<String>,
    /// Why it takes no new calls while those in flight finish (the server's GOAWAY).
    closing: Option<String>,
}

#[derive(Default)]
struct Stream {
    send_window: i64,
    /// The reply's status and headers, until the call takes them.
    head: Option<(StatusCode, HeaderMap)>,
    head_seen: bool,
    data: VecDeque<Bytes>,
    trailers: Option<HeaderMap>,
    ended: bool,
    received: i64,
    /// The error code of the server's RST_STREAM, or a broken connection's reason.
    failed: Option<String>,
}

impl Connection {
    /// Connects to `addr` (`host:port`). Nothing is written until the first call.
    pub fn open(addr: &str) -> std::io::Result<Connection> {
        let socket = TcpStream::connect(addr)?;
        socket.set_nodelay(true)?;
        let mut output = PREFACE.to_vec();
        let mut settings = Vec::new();
        for (id, value) in [
            (SETTINGS_ENABLE_PUSH, 0),
            (SETTINGS_INITIAL_WINDOW_SIZE, RECEIVE_WINDOW as u32),
        ] {
            settings.extend_from_slice(&id.to_be_bytes());
            settings.extend_from_slice(&value.to_be_bytes());
        }
        frame(&mut output, SETTINGS, 0, 0, &settings);
        let grow = (RECEIVE_WINDOW - DEFAULT_WINDOW) as u32;
        frame(&mut output, WINDOW_UPDATE, 0, 0, &grow.to_be_bytes());
        Ok(Connection {
            inner: Arc::new(Mutex::new(Inner {
                socket,
                input: BytesMut::with_capacity(64 << 10),
                output,
                decoder: hpack::Decoder::default(),
                next_stream: 1,
                streams: HashMap::new(),
                header_block: None,
                send_window: DEFAULT_WINDOW,
                stream_send_window: DEFAULT_WINDOW,
                max_frame: DEFAULT_MAX_FRAME,
                received: 0,
                broken: None,
                closing: None,
            })),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends a request and waits for the head of its reply; the reply's body is read as
    /// the caller polls it.
    pub fn request(
        &self,
        head: http::request::Parts,
        body: Bytes,
    ) -> Result<http::Response<ReplyBody>, BoxError> {
        let mut inner = self.lock();
        let id = inner.send_request(&head, body)?;
        let reply = inner.wait_for_head(id);
        if reply.is_err() {
            inner.streams.remove(&id);
        }
        let (status, headers) = reply?;
        let mut response = http::Response::new(ReplyBody {
            connection: self.clone(),
            stream: id,
            done: false,
        });
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }
}

/// The transport of tonic's client (`client::Ctld`).
impl tower_service::Service<http::Request<tonic::body::Body>> for Connection {
    type Response = http::Response<ReplyBody>;
    type Error = BoxError;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        use http_body_util::BodyExt;
        let conn = self.clone();
        Box::pin(async move {
            let (head, body) = req.into_parts();
            // Every request of the CLI is one message, encoded as soon as it is polled.
            let body = body.collect().await?.to_bytes();
            conn.request(head, body)
        })
    }
}

/// The unavailable status a broken connection gives its calls, as tonic's channel did.
fn unavailable(reason: impl std::fmt::Display) -> BoxError {
    Box::new(tonic::Status::unavailable(reason.to_string()))
}

impl Inner {
    fn send_request(&mut self, head: &http::request::Parts, body: Bytes) -> Result<u32, BoxError> {
        if let Some(reason) = self.broken.as_ref().or(self.closing.as_ref()) {
            return Err(unavailable(reason));
        }
        let id = self.next_stream;
        self.next_stream += 2;
        let block = encode_request_head(head);
        let end = if body.is_empty() { END_STREAM } else { 0 };
        let chunks: Vec<&[u8]> = block.chunks(self.max_frame).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let flags = if i + 1 == chunks.len() {
                END_HEADERS
            } else {
                0
            };
            if i == 0 {
                frame(&mut self.output, HEADERS, flags | end, id, chunk);
            } else {
                frame(&mut self.output, CONTINUATION, flags, id, chunk);
            }
        }
        self.streams.insert(
            id,
            Stream {
                send_window: self.stream_send_window,
                ..Stream::default()
            },
        );
        let mut rest = body;
        while !rest.is_empty() {
            let stream = &self.streams[&id];
            if stream.ended || stream.failed.is_some() {
                // The server answered (or refused) before taking the whole body.
                break;
            }
            let window = self.send_window.min(stream.send_window);
            if window <= 0 {
                self.flush()?;
                self.read_frame()?;
                continue;
            }
            let n = rest.len().min(window as usize).min(self.max_frame);
            let chunk = rest.split_to(n);
            let flags = if rest.is_empty() { END_STREAM } else { 0 };
            frame(&mut self.output, DATA, flags, id, &chunk);
            self.send_window -= n as i64;
            if let Some(stream) = self.streams.get_mut(&id) {
                stream.send_window -= n as i64;
            }
        }
        self.flush()?;
        Ok(id)
    }

    fn wait_for_head(&mut self, id: u32) -> Result<(StatusCode, HeaderMap), BoxError> {
        loop {
            let stream = self.streams.get_mut(&id).expect("stream of a call");
            if let Some(head) = stream.head.take() {
                return Ok(head);
            }
            if let Some(reason) = &stream.failed {
                return Err(unavailable(reason));
            }
            if stream.ended {
                return Err(unavailable("the stream ended without a reply"));
            }
            self.read_frame()?;
        }
    }

    /// Writes what is waiting in `output`.
    fn flush(&mut self) -> Result<(), BoxError> {
        if self.output.is_empty() {
            return Ok(());
        }
        let result = self.socket.write_all(&self.output);
        self.output.clear();
        result.map_err(|e| self.break_with(format!("connection to the controller lost: {e}")))
    }

    /// Marks the connection broken: every open stream fails with `reason`.
    fn break_with(&mut self, reason: String) -> BoxError {
        for stream in self.streams.values_mut() {
            if !stream.ended {
                stream.failed.get_or_insert_with(|| reason.clone());
            }
        }
        self.broken.get_or_insert_with(|| reason.clone());
        unavailable(reason)
    }

    /// Reads one frame from the socket and applies it.
    fn read_frame(&mut self) -> Result<(), BoxError> {
        if let Some(reason) = &self.broken {
            return Err(unavailable(reason));
        }
        let header = self.take_input(9)?;
        let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        let kind = header[3];
        let flags = header[4];
        let id = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & (u32::MAX >> 1);
        let payload = self.take_input(len)?;
        self.apply(kind, flags, id, payload)
            .map_err(|e| self.break_with(format!("protocol error from the controller: {e}")))
    }

    /// The next `n` bytes of input, reading from the socket as needed.
    fn take_input(&mut self, n: usize) -> Result<Bytes, BoxError> {
        while self.input.len() < n {
            let want = (n - self.input.len()).max(64 << 10);
            match self.read_into_spare(want) {
                Ok(0) => {
                    return Err(self.break_with("the controller closed the connection".into()));
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(self.break_with(format!("connection to the controller lost: {e}")));
                }
            }
        }
        Ok(self.input.split_to(n).freeze())
    }

    /// Reads what the socket has, up to the input's free room (at least `want`), without
    /// zeroing that room first: a reply of a hundred bytes then touches one page of the
    /// buffer, not sixteen (each a page fault in a short-lived process).
    fn read_into_spare(&mut self, want: usize) -> std::io::Result<usize> {
        self.input.reserve(want);
        let room = self.input.spare_capacity_mut();
        // SAFETY: `room` is valid for writes of `room.len()` bytes; read(2) writes at most
        // that many and returns how many it wrote.
        let got = unsafe {
            libc::read(
                self.socket.as_raw_fd(),
                room.as_mut_ptr().cast(),
                room.len(),
            )
        };
        let got = usize::try_from(got).map_err(|_| std::io::Error::last_os_error())?;
        // SAFETY: the first `got` bytes of the free room were just written by read(2).
        unsafe { self.input.set_len(self.input.len() + got) };
        Ok(got)
    }

    fn apply(&mut self, kind: u8, flags: u8, id: u32, payload: Bytes) -> Result<(), String> {
        if self.header_block.is_some() && kind != CONTINUATION {
            return Err("a header block was interrupted".into());
        }
        match kind {
            DATA => {
                let data = unpad(flags, &payload)?;
                // Flow control counts the whole payload, padding included.
                self.received += payload.len() as i64;
                self.refill_windows(id, payload.len() as i64);
                if let Some(stream) = self.streams.get_mut(&id) {
                    if !data.is_empty() {
                        stream.data.push_back(data);
                    }
                    stream.ended |= flags & END_STREAM != 0;
                }
            }
            HEADERS => {
                let mut block = unpad(flags, &payload)?;
                if flags & PRIORITY != 0 {
                    if block.len() < 5 {
                        return Err("short HEADERS frame".into());
                    }
                    block.advance(5);
                }
                self.header_block = Some((id, block.to_vec(), flags & END_STREAM != 0));
                if flags & END_HEADERS != 0 {
                    self.end_header_block()?;
                }
            }
            CONTINUATION => {
                let Some((block_id, block, _)) = self.header_block.as_mut() else {
                    return Err("CONTINUATION without a header block".into());
                };
                if *block_id != id {
                    return Err("CONTINUATION for another stream".into());
                }
                block.extend_from_slice(&payload);
                if flags & END_HEADERS != 0 {
                    self.end_header_block()?;
                }
            }
            RST_STREAM => {
                let code = payload
                    .get(..4)
                    .map(|b| u32::from_be_bytes(b.try_into().unwrap()));
                if let Some(stream) = self.streams.get_mut(&id) {
                    stream.failed = Some(format!(
                        "the controller reset the call (HTTP/2 error {})",
                        code.unwrap_or(0)
                    ));
                }
            }
            SETTINGS if flags & ACK == 0 => {
                for setting in payload.chunks_exact(6) {
                    let key = u16::from_be_bytes([setting[0], setting[1]]);
                    let value =
                        u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]);
                    match key {
                        SETTINGS_INITIAL_WINDOW_SIZE => {
                            let delta = i64::from(value) - self.stream_send_window;
                            self.stream_send_window = i64::from(value);
                            for stream in self.streams.values_mut() {
                                stream.send_window += delta;
                            }
                        }
                        SETTINGS_MAX_FRAME_SIZE => {
                            self.max_frame = (value as usize).clamp(DEFAULT_MAX_FRAME, 1 << 24)
                        }
                        _ => {}
                    }
                }
                // Acknowledged with the next write; nothing waits on it.
                frame(&mut self.output, SETTINGS, ACK, 0, &[]);
            }
            PING if flags & ACK == 0 => {
                frame(&mut self.output, PING, ACK, 0, &payload);
                self.flush().map_err(|e| e.to_string())?;
            }
            GOAWAY => {
                let last = payload
                    .get(..4)
                    .map(|b| u32::from_be_bytes(b.try_into().unwrap()) & (u32::MAX >> 1))
                    .unwrap_or(0);
                let reason = "the controller is closing the connection".to_string();
                for (&stream_id, stream) in self.streams.iter_mut() {
                    if stream_id > last && !stream.ended {
                        stream.failed.get_or_insert_with(|| reason.clone());
                    }
                }
                self.closing.get_or_insert(reason);
            }
            WINDOW_UPDATE => {
                let grow = payload
                    .get(..4)
                    .map(|b| u32::from_be_bytes(b.try_into().unwrap()) & (u32::MAX >> 1))
                    .ok_or("short WINDOW_UPDATE frame")?;
                if id == 0 {
                    self.send_window += i64::from(grow);
                } else if let Some(stream) = self.streams.get_mut(&id) {
                    stream.send_window += i64::from(grow);
                }
            }
            PUSH_PROMISE => return Err("PUSH_PROMISE although push is disabled".into()),
            // SETTINGS and PING acknowledgements, PRIORITY, and unknown frame types.
            _ => {}
        }
        Ok(())
    }

    /// Grants the server more window once it has used a good part of what it was given.
    fn refill_windows(&mut self, id: u32, len: i64) {
        if let Some(stream) = self.streams.get_mut(&id) {
            stream.received += len;
            if stream.received >= RECEIVE_REFILL {
                let grow = stream.received as u32;
                stream.received = 0;
                frame(&mut self.output, WINDOW_UPDATE, 0, id, &grow.to_be_bytes());
            }
        }
        if self.received >= RECEIVE_REFILL {
            let grow = self.received as u32;
            self.received = 0;
            frame(&mut self.output, WINDOW_UPDATE, 0, 0, &grow.to_be_bytes());
        }
    }

    fn end_header_block(&mut self) -> Result<(), String> {
        let (id, block, ends) = self.header_block.take().expect("a header block");
        // Every block is decoded, whatever its stream: it may change the decoder's table.
        let fields = self
            .decoder
            .decode(&block)
            .map_err(|e| format!("bad header block: {e}"))?;
        let Some(stream) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        let mut status = None;
        let mut headers = HeaderMap::new();
        for (name, value) in fields {
            if name == b":status" {
                let code = std::str::from_utf8(&value)
                    .ok()
                    .and_then(|v| v.parse().ok());
                status = Some(code.ok_or("bad :status")?);
            } else if !name.starts_with(b":") {
                let name = HeaderName::from_bytes(&name).map_err(|e| e.to_string())?;
                let value = HeaderValue::from_bytes(&value).map_err(|e| e.to_string())?;
                headers.append(name, value);
            }
        }
        if !stream.head_seen {
            let status: u16 = status.ok_or("a reply without :status")?;
            if (100..200).contains(&status) {
                return Ok(());
            }
            let status = StatusCode::from_u16(status).map_err(|e| e.to_string())?;
            stream.head = Some((status, headers));
            stream.head_seen = true;
        } else {
            stream.trailers = Some(headers);
        }
        stream.ended |= ends;
        Ok(())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Acknowledgements and cancellations still owed; the socket closes after.
        let _ = self.socket.write_all(&self.output);
    }
}

/// Appends one frame to `out`.
fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, id: u32, payload: &[u8]) {
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(payload);
}

/// The payload of a frame without its padding.
fn unpad(flags: u8, payload: &Bytes) -> Result<Bytes, String> {
    if flags & PADDED == 0 {
        return Ok(payload.clone());
    }
    let pad = *payload.first().ok_or("empty padded frame")? as usize;
    if pad + 1 > payload.len() {
        return Err("padding longer than the frame".into());
    }
    Ok(payload.slice(1..payload.len() - pad))
}

/// The request's header block: pseudo-headers first, every field a literal that is
/// not indexed, with names from the static table where it has them.
fn encode_request_head(head: &http::request::Parts) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    // Indexed fields of the static table: `:method: POST` (3) and `:scheme: http` (6).
    match head.method {
        http::Method::POST => hpack::encode_indexed(&mut out, 3),
        ref other => hpack::encode_literal(&mut out, 2, b"", other.as_str().as_bytes()),
    }
    match head.uri.scheme_str() {
        Some("https") => hpack::encode_indexed(&mut out, 7),
        _ => hpack::encode_indexed(&mut out, 6),
    }
    let path = head.uri.path_and_query().map_or("/", |p| p.as_str());
    hpack::encode_literal(&mut out, 4, b"", path.as_bytes());
    if let Some(authority) = head.uri.authority() {
        hpack::encode_literal(&mut out, 1, b"", authority.as_str().as_bytes());
    }
    for (name, value) in &head.headers {
        // Connection-specific fields have no place in HTTP/2.
        if matches!(
            name.as_str(),
            "connection"
                | "keep-alive"
                | "proxy-connection"
                | "transfer-encoding"
                | "upgrade"
                | "host"
        ) {
            continue;
        }
        hpack::encode_literal(&mut out, 0, name.as_str().as_bytes(), value.as_bytes());
    }
    out
}

/// The body of a reply, read from the connection as it is polled.
pub struct ReplyBody {
    connection: Connection,
    stream: u32,
    done: bool,
}

impl http_body::Body for ReplyBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let connection = self.connection.clone();
        let mut inner = connection.lock();
        let id = self.stream;
        loop {
            let Some(stream) = inner.streams.get_mut(&id) else {
                self.done = true;
                return Poll::Ready(None);
            };
            if let Some(data) = stream.data.pop_front() {
                return Poll::Ready(Some(Ok(http_body::Frame::data(data))));
            }
            if let Some(reason) = stream.failed.clone() {
                inner.streams.remove(&id);
                self.done = true;
                return Poll::Ready(Some(Err(unavailable(reason))));
            }
            if stream.ended {
                let trailers = stream.trailers.take();
                inner.streams.remove(&id);
                self.done = true;
                return Poll::Ready(trailers.map(|t| Ok(http_body::Frame::trailers(t))));
            }
            if let Err(e) = inner.read_frame() {
                inner.streams.remove(&id);
                self.done = true;
                return Poll::Ready(Some(Err(e)));
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

impl Drop for ReplyBody {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut inner = self.connection.lock();
        if inner.streams.remove(&self.stream).is_some_and(|s| !s.ended) {
            frame(
                &mut inner.output,
                RST_STREAM,
                0,
                self.stream,
                &CANCEL.to_be_bytes(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use std::io::Read;
    use std::net::TcpListener;

    /// The server's side of one connection, driven frame by frame by a test.
    struct Peer {
        socket: TcpStream,
    }

    impl Peer {
        fn read_frame(&mut self) -> (u8, u8, u32, Vec<u8>) {
            let mut head = [0u8; 9];
            self.socket.read_exact(&mut head).unwrap();
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let mut payload = vec![0; len];
            self.socket.read_exact(&mut payload).unwrap();
            let id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]);
            (head[3], head[4], id, payload)
        }

        /// Reads frames until one of `kind` (the others are dropped).
        fn read_until(&mut self, kind: u8) -> (u8, u32, Vec<u8>) {
            loop {
                let (k, flags, id, payload) = self.read_frame();
                if k == kind {
                    return (flags, id, payload);
                }
            }
        }

        fn write(&mut self, kind: u8, flags: u8, id: u32, payload: &[u8]) {
            let mut out = Vec::new();
            frame(&mut out, kind, flags, id, payload);
            self.socket.write_all(&out).unwrap();
        }

        /// Reads the preface, then the request's HEADERS and every DATA frame up to
        /// END_STREAM; returns the header fields and the body.
        fn read_request(&mut self) -> (Vec<hpack::Field>, Vec<u8>) {
            let mut preface = [0u8; 24];
            self.socket.read_exact(&mut preface).unwrap();
            assert_eq!(&preface[..], PREFACE);
            let (flags, id, block) = self.read_until(HEADERS);
            assert_eq!(id, 1);
            assert_ne!(flags & END_HEADERS, 0);
            let fields = hpack::Decoder::default().decode(&block).unwrap();
            let mut body = Vec::new();
            let mut ended = flags & END_STREAM != 0;
            while !ended {
                let (flags, _, data) = self.read_until(DATA);
                body.extend(data);
                ended = flags & END_STREAM != 0;
            }
            (fields, body)
        }

        /// A whole gRPC reply: head, one message, trailers.
        fn reply(&mut self, id: u32, message: &[u8]) {
            let mut head = Vec::new();
            hpack::encode_indexed(&mut head, 8); // :status 200
            hpack::encode_literal(&mut head, 0, b"content-type", b"application/grpc");
            self.write(HEADERS, END_HEADERS, id, &head);
            self.write(DATA, 0, id, &grpc_message(message));
            let mut trailers = Vec::new();
            hpack::encode_literal(&mut trailers, 0, b"grpc-status", b"0");
            self.write(HEADERS, END_HEADERS | END_STREAM, id, &trailers);
        }
    }

    fn grpc_message(bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![0];
        out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(bytes);
        out
    }

    /// Starts a server that runs `script` on its first connection; returns the address.
    fn serve(
        script: impl FnOnce(&mut Peer) + Send + 'static,
    ) -> (String, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let handle = std::thread::spawn(move || {
            let (socket, _) = listener.accept().unwrap();
            script(&mut Peer { socket });
        });
        (addr, handle)
    }

    fn request(path: &str) -> http::request::Parts {
        let (parts, ()) = http::Request::post(format!("http://controller{path}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap()
            .into_parts();
        parts
    }

    fn field<'a>(fields: &'a [hpack::Field], name: &str) -> Option<&'a [u8]> {
        fields
            .iter()
            .find(|(n, _)| n == name.as_bytes())
            .map(|(_, v)| v.as_slice())
    }

    #[tokio::test]
    async fn a_call_is_one_write_and_reads_data_and_trailers() {
        let (addr, server) = serve(|peer| {
            // Everything the call sends arrives in one segment: one read takes it all.
            let mut buf = vec![0u8; 64 << 10];
            let n = peer.socket.read(&mut buf).unwrap();
            assert!(buf.starts_with(PREFACE));
            let mut frames = Vec::new();
            let mut at = PREFACE.len();
            while at < n {
                let len = u32::from_be_bytes([0, buf[at], buf[at + 1], buf[at + 2]]) as usize;
                frames.push((buf[at + 3], buf[at + 4], buf[at + 9..at + 9 + len].to_vec()));
                at += 9 + len;
            }
            let kinds: Vec<u8> = frames.iter().map(|f| f.0).collect();
            assert_eq!(kinds, [SETTINGS, WINDOW_UPDATE, HEADERS, DATA]);
            let fields = hpack::Decoder::default().decode(&frames[2].2).unwrap();
            assert_eq!(field(&fields, ":method"), Some(&b"POST"[..]));
            assert_eq!(
                field(&fields, ":path"),
                Some(&b"/drover.v1.Ctld/SubmitJob"[..])
            );
            assert_eq!(field(&fields, ":authority"), Some(&b"controller"[..]));
            assert_eq!(field(&fields, "te"), Some(&b"trailers"[..]));
            assert_eq!(frames[3], (DATA, END_STREAM, b"job".to_vec()));
            // A PING in the middle of the reply is answered.
            peer.write(SETTINGS, 0, 0, &[]);
            peer.write(PING, 0, 0, b"12345678");
            assert_eq!(peer.read_until(PING), (ACK, 0, b"12345678".to_vec()));
            peer.reply(1, b"42");
        });
        let conn = Connection::open(&addr).unwrap();
        let reply = conn
            .request(
                request("/drover.v1.Ctld/SubmitJob"),
                Bytes::from_static(b"job"),
            )
            .unwrap();
        assert_eq!(reply.status(), StatusCode::OK);
        assert_eq!(reply.headers()["content-type"], "application/grpc");
        let body = reply.into_body().collect().await.unwrap();
        let trailers = body.trailers().cloned().unwrap();
        assert_eq!(trailers["grpc-status"], "0");
        assert_eq!(body.to_bytes(), grpc_message(b"42"));
        drop(conn);
        server.join().unwrap();
    }

    #[tokio::test]
    async fn a_large_body_waits_for_the_servers_window() {
        const SIZE: usize = 200_000;
        let (addr, server) = serve(|peer| {
            let mut preface = [0u8; 24];
            peer.socket.read_exact(&mut preface).unwrap();
            let mut window = DEFAULT_WINDOW as usize;
            let mut received = 0;
            loop {
                let (kind, flags, id, payload) = peer.read_frame();
                if kind != DATA {
                    continue;
                }
                assert!(payload.len() <= DEFAULT_MAX_FRAME);
                received += payload.len();
                // Never more than the window granted so far.
                assert!(received <= window, "{received} > {window}");
                if flags & END_STREAM != 0 {
                    break;
                }
                if received == window {
                    // Grant the next 50,000 bytes, on the connection and the stream.
                    window += 50_000;
                    peer.write(WINDOW_UPDATE, 0, 0, &50_000u32.to_be_bytes());
                    peer.write(WINDOW_UPDATE, 0, id, &50_000u32.to_be_bytes());
                }
            }
            assert_eq!(received, SIZE);
            peer.reply(1, b"ok");
        });
        let conn = Connection::open(&addr).unwrap();
        let reply = conn
            .request(request("/x"), Bytes::from(vec![7u8; SIZE]))
            .unwrap();
        let body = reply.into_body().collect().await.unwrap();
        assert_eq!(body.to_bytes(), grpc_message(b"ok"));
        server.join().unwrap();
    }

    #[tokio::test]
    async fn continuation_frames_and_padding_are_read() {
        let (addr, server) = serve(|peer| {
            peer.read_request();
            let mut head = Vec::new();
            hpack::encode_indexed(&mut head, 8);
            hpack::encode_literal(&mut head, 0, b"x-long", "v".repeat(100).as_bytes());
            let (first, rest) = head.split_at(10);
            // HEADERS padded with 3 bytes, then the rest of the block in a CONTINUATION.
            let mut padded = vec![3];
            padded.extend_from_slice(first);
            padded.extend_from_slice(&[0, 0, 0]);
            peer.write(HEADERS, PADDED, 1, &padded);
            peer.write(CONTINUATION, END_HEADERS, 1, rest);
            let mut data = vec![2];
            data.extend(grpc_message(b"hi"));
            data.extend_from_slice(&[0, 0]);
            peer.write(DATA, PADDED | END_STREAM, 1, &data);
        });
        let conn = Connection::open(&addr).unwrap();
        let reply = conn
            .request(request("/x"), Bytes::from_static(b"q"))
            .unwrap();
        assert_eq!(reply.headers()["x-long"], "v".repeat(100).as_str());
        let body = reply.into_body().collect().await.unwrap();
        assert!(body.trailers().is_none());
        assert_eq!(body.to_bytes(), grpc_message(b"hi"));
        server.join().unwrap();
    }

    /// The gRPC status a failed call gives tonic.
    fn status(e: BoxError) -> tonic::Status {
        *e.downcast::<tonic::Status>().expect("a tonic status")
    }

    #[test]
    fn a_reset_a_goaway_or_a_closed_socket_fail_the_call_as_unavailable() {
        let (addr, server) = serve(|peer| {
            peer.read_request();
            peer.write(RST_STREAM, 0, 1, &2u32.to_be_bytes());
        });
        let conn = Connection::open(&addr).unwrap();
        let e = status(conn.request(request("/x"), Bytes::new()).err().unwrap());
        assert_eq!(e.code(), tonic::Code::Unavailable);
        assert!(
            e.message().contains("reset the call (HTTP/2 error 2)"),
            "{e}"
        );
        server.join().unwrap();

        let (addr, server) = serve(|peer| {
            peer.read_request();
            let mut goaway = 0u32.to_be_bytes().to_vec();
            goaway.extend_from_slice(&0u32.to_be_bytes());
            peer.write(GOAWAY, 0, 0, &goaway);
        });
        let conn = Connection::open(&addr).unwrap();
        let e = status(conn.request(request("/x"), Bytes::new()).err().unwrap());
        assert!(e.message().contains("closing the connection"), "{e}");
        // No new call goes out on it.
        let e = status(conn.request(request("/y"), Bytes::new()).err().unwrap());
        assert!(e.message().contains("closing the connection"), "{e}");
        server.join().unwrap();

        let (addr, server) = serve(|peer| {
            peer.read_request();
        });
        let conn = Connection::open(&addr).unwrap();
        let e = status(conn.request(request("/x"), Bytes::new()).err().unwrap());
        assert_eq!(e.code(), tonic::Code::Unavailable);
        assert!(e.message().contains("closed the connection"), "{e}");
        server.join().unwrap();
    }
}
