//! The fixer on byte streams built as gRPC-Go 1.2x builds them.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

use super::*;

type Headers = Vec<(Vec<u8>, Vec<u8>)>;

/// A frame as the server reads it: kind, flags, stream, payload.
type Frame = (u8, u8, u32, Vec<u8>);

fn headers(authority: &str, path: &str) -> Headers {
    [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", authority),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]
    .iter()
    .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
    .collect()
}

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// A client's bytes: preface, SETTINGS, a padded and prioritised HEADERS
/// with DATA on stream 1, then stream 3's block split over HEADERS and
/// CONTINUATION (its authority now an index into the client's table).
fn client_bytes(authority: &str) -> Vec<u8> {
    let mut enc = loona_hpack::Encoder::new();
    let encode = |enc: &mut loona_hpack::Encoder, h: &Headers| {
        enc.encode(h.iter().map(|(n, v)| (n.as_slice(), v.as_slice())))
    };
    let mut out = PREFACE.to_vec();
    frame(&mut out, 0x4, 0, 0, &[0, 3, 0, 0, 0, 100]);
    let block = encode(&mut enc, &headers(authority, "/runtime.v1alpha2.RuntimeService/Version"));
    let mut payload = vec![2]; // pad length
    payload.extend_from_slice(&[0, 0, 0, 0, 16]); // priority
    payload.extend_from_slice(&block);
    payload.extend_from_slice(&[0, 0]);
    frame(&mut out, HEADERS, END_HEADERS | PADDED | PRIORITY, 1, &payload);
    frame(&mut out, 0x0, END_STREAM, 1, b"\0\0\0\0\x02\x0a\x00");
    let block =
        encode(&mut enc, &headers(authority, "/runtime.v1alpha2.RuntimeService/ListContainers"));
    let (a, b) = block.split_at(block.len() / 2);
    frame(&mut out, HEADERS, END_STREAM, 3, a);
    frame(&mut out, CONTINUATION, END_HEADERS, 3, b);
    out
}

/// The frames of a server's input after the preface: (kind, flags,
/// stream, payload), header blocks decoded.
fn server_view(bytes: &[u8]) -> (Vec<Frame>, Vec<Headers>) {
    assert_eq!(&bytes[..PREFACE.len()], PREFACE);
    let mut rest = &bytes[PREFACE.len()..];
    let (mut frames, mut blocks) = (Vec::new(), Vec::new());
    let mut dec = loona_hpack::Decoder::new();
    while !rest.is_empty() {
        let len = u32::from_be_bytes([0, rest[0], rest[1], rest[2]]) as usize;
        let stream = u32::from_be_bytes([rest[5], rest[6], rest[7], rest[8]]);
        let payload = rest[9..9 + len].to_vec();
        if rest[3] == HEADERS {
            blocks.push(dec.decode(&payload).unwrap());
        }
        frames.push((rest[3], rest[4], stream, payload));
        rest = &rest[9 + len..];
    }
    (frames, blocks)
}

/// Reads at most `chunk` bytes per call, as a slow socket would.
struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = self.chunk.min(self.data.len()).min(buf.remaining());
        buf.put_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Poll::Ready(Ok(()))
    }
}

async fn fixed(input: &[u8], chunk: usize) -> Vec<u8> {
    let mut out = Vec::new();
    AuthorityFix::new(Chunked { data: input, chunk }).read_to_end(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn a_socket_path_authority_becomes_localhost_and_everything_else_is_kept() {
    let out = fixed(&client_bytes("/var/run/kolo/runtime-proxy.sock"), 8192).await;
    let (frames, blocks) = server_view(&out);
    let kinds: Vec<(u8, u8, u32)> = frames.iter().map(|f| (f.0, f.1, f.2)).collect();
    assert_eq!(
        kinds,
        [
            (0x4, 0, 0),
            (HEADERS, END_HEADERS, 1),
            (0x0, END_STREAM, 1),
            (HEADERS, END_STREAM | END_HEADERS, 3)
        ]
    );
    assert_eq!(frames[0].3, [0, 3, 0, 0, 0, 100], "SETTINGS untouched");
    assert_eq!(frames[2].3, b"\0\0\0\0\x02\x0a\x00", "DATA untouched");
    assert_eq!(blocks[0], headers("localhost", "/runtime.v1alpha2.RuntimeService/Version"));
    assert_eq!(blocks[1], headers("localhost", "/runtime.v1alpha2.RuntimeService/ListContainers"));
}

#[tokio::test]
async fn a_valid_authority_is_kept_and_the_stream_may_arrive_a_byte_at_a_time() {
    let input = client_bytes("localhost:10010");
    let whole = fixed(&input, 8192).await;
    let (_, blocks) = server_view(&whole);
    assert_eq!(blocks[0], headers("localhost:10010", "/runtime.v1alpha2.RuntimeService/Version"));
    for chunk in [1, 2, 7, 9, 10, 31] {
        assert_eq!(fixed(&input, chunk).await, whole, "chunk {chunk}");
    }
}

#[tokio::test]
async fn a_broken_header_sequence_is_an_error_not_a_hang() {
    let mut input = PREFACE.to_vec();
    frame(&mut input, CONTINUATION, END_HEADERS, 1, b"x");
    let mut out = Vec::new();
    let err = AuthorityFix::new(input.as_slice()).read_to_end(&mut out).await.unwrap_err();
    assert!(err.to_string().contains("CONTINUATION without HEADERS"), "{err}");
}
