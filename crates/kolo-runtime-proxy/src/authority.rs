//! Accepting the kubelet's `:authority` over a unix socket.
//!
//! gRPC-Go before 1.41 (kubelet ≤ 1.22, so this repository's 1.20 test
//! cluster) sends the socket path as the HTTP/2 `:authority`
//! (`/var/run/kolo/runtime-proxy.sock`). That is not a URI authority, and
//! the `h2` server refuses every such request with `PROTOCOL_ERROR`
//! (hyperium/h2#487, open), so a kubelet could not even ask the proxy for
//! the runtime's version.
//!
//! [`AuthorityFix`] sits between the socket and the HTTP/2 server and
//! rewrites the header blocks the client sends: each is decoded with an
//! HPACK decoder that mirrors the client's table, an `:authority` that is
//! not a valid authority becomes `localhost` (what newer gRPC-Go sends),
//! and the block is encoded again with an encoder that mirrors the
//! server's table. Every other frame passes through byte for byte; the
//! server's answers are not touched.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEADER: usize = 9;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// The largest frame the server accepts by default (its
/// SETTINGS_MAX_FRAME_SIZE), so re-encoded blocks are split at it.
const MAX_FRAME: usize = 16_384;
/// The largest header block the fixer buffers.
pub const MAX_HEADER_BLOCK: usize = 1 << 20;

/// A stream whose client-sent header blocks carry a valid `:authority`.
pub struct AuthorityFix<S> {
    inner: S,
    /// Bytes read from `inner` not yet processed.
    input: BytesMut,
    /// Bytes ready for the reader.
    output: BytesMut,
    preface_left: usize,
    /// Bytes of the current non-header frame's payload still to pass on.
    passthrough_left: usize,
    /// The header block being gathered: stream id, END_STREAM, fragments.
    block: Option<(u32, bool, BytesMut)>,
    decoder: loona_hpack::Decoder<'static>,
    encoder: loona_hpack::Encoder<'static>,
    eof: bool,
}

impl<S> AuthorityFix<S> {
    /// Wraps the server side of a connection.
    pub fn new(inner: S) -> AuthorityFix<S> {
        AuthorityFix {
            inner,
            input: BytesMut::new(),
            output: BytesMut::new(),
            preface_left: PREFACE.len(),
            passthrough_left: 0,
            block: None,
            decoder: loona_hpack::Decoder::new(),
            encoder: loona_hpack::Encoder::new(),
            eof: false,
        }
    }

    /// Moves what can be moved from `input` to `output`; `false` when more
    /// input is needed.
    fn step(&mut self) -> io::Result<bool> {
        if self.input.is_empty() {
            return Ok(false);
        }
        let pass =
            if self.preface_left > 0 { &mut self.preface_left } else { &mut self.passthrough_left };
        if *pass > 0 {
            let n = (*pass).min(self.input.len());
            self.output.extend_from_slice(&self.input.split_to(n));
            *pass -= n;
            return Ok(true);
        }
        if self.input.len() < FRAME_HEADER {
            return Ok(false);
        }
        let h = &self.input[..FRAME_HEADER];
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        let (kind, flags) = (h[3], h[4]);
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        if kind != HEADERS && kind != CONTINUATION {
            if self.block.is_some() {
                return Err(invalid("a frame inside a header block"));
            }
            self.output.extend_from_slice(&self.input.split_to(FRAME_HEADER));
            self.passthrough_left = len;
            return Ok(true);
        }
        if self.input.len() < FRAME_HEADER + len {
            return Ok(false);
        }
        self.input.advance(FRAME_HEADER);
        let payload = self.input.split_to(len);
        self.gather(kind, flags, stream, payload)?;
        Ok(true)
    }

    fn gather(
        &mut self,
        kind: u8,
        flags: u8,
        stream: u32,
        mut payload: BytesMut,
    ) -> io::Result<()> {
        if kind == HEADERS {
            if self.block.is_some() {
                return Err(invalid("HEADERS inside a header block"));
            }
            if flags & PADDED != 0 {
                let pad =
                    *payload.first().ok_or_else(|| invalid("padded HEADERS without a length"))?
                        as usize;
                if pad + 1 > payload.len() {
                    return Err(invalid("HEADERS padding longer than the frame"));
                }
                payload.advance(1);
                payload.truncate(payload.len() - pad);
            }
            if flags & PRIORITY != 0 {
                if payload.len() < 5 {
                    return Err(invalid("HEADERS priority fields missing"));
                }
                // Stream priority is advisory (and deprecated); the server
                // does not use it.
                payload.advance(5);
            }
            self.block = Some((stream, flags & END_STREAM != 0, BytesMut::new()));
        }
        let Some((id, _, fragments)) = self.block.as_mut() else {
            return Err(invalid("CONTINUATION without HEADERS"));
        };
        if *id != stream {
            return Err(invalid("CONTINUATION of another stream"));
        }
        if fragments.len() + payload.len() > MAX_HEADER_BLOCK {
            return Err(invalid("header block larger than 1 MiB"));
        }
        fragments.extend_from_slice(&payload);
        if flags & END_HEADERS != 0 {
            let (stream, end_stream, fragments) = self.block.take().unwrap_or_default();
            self.emit(stream, end_stream, &fragments)?;
        }
        Ok(())
    }

    fn emit(&mut self, stream: u32, end_stream: bool, block: &[u8]) -> io::Result<()> {
        let mut headers =
            self.decoder.decode(block).map_err(|e| invalid(&format!("HPACK: {e:?}")))?;
        for (name, value) in &mut headers {
            if name.as_slice() == b":authority"
                && http::uri::Authority::try_from(value.as_slice()).is_err()
            {
                *value = b"localhost".to_vec();
            }
        }
        let encoded =
            self.encoder.encode(headers.iter().map(|(n, v)| (n.as_slice(), v.as_slice())));
        let mut chunks = encoded.chunks(MAX_FRAME).peekable();
        let mut first = true;
        // An empty block is still one frame.
        let empty: &[u8] = &[];
        let mut next = chunks.next().or(Some(empty));
        while let Some(chunk) = next {
            next = chunks.next();
            let mut flags = 0;
            if first && end_stream {
                flags |= END_STREAM;
            }
            if next.is_none() {
                flags |= END_HEADERS;
            }
            let kind = if first { HEADERS } else { CONTINUATION };
            let len = chunk.len() as u32;
            self.output.put_slice(&len.to_be_bytes()[1..]);
            self.output.put_u8(kind);
            self.output.put_u8(flags);
            self.output.put_u32(stream);
            self.output.put_slice(chunk);
            first = false;
        }
        Ok(())
    }
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("HTTP/2 from the client: {message}"))
}

impl<S: AsyncRead + Unpin> AsyncRead for AuthorityFix<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if !this.output.is_empty() {
                let n = this.output.len().min(buf.remaining());
                buf.put_slice(&this.output.split_to(n));
                return Poll::Ready(Ok(()));
            }
            if this.step()? {
                continue;
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 8192];
            let mut read = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                this.eof = true;
            }
            this.input.extend_from_slice(read.filled());
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for AuthorityFix<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[path = "authority_tests.rs"]
mod tests;
