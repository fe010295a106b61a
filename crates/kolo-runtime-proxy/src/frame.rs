//! gRPC's length-prefixed message framing, for the unary calls the proxy
//! reads: one byte "compressed", four bytes big-endian length, the message.

use bytes::{BufMut, Bytes, BytesMut};

/// Why a request body is not one readable message (the proxy then passes
/// it through untouched, and the runtime answers it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Fewer than the 5 header bytes.
    #[error("gRPC frame: {0} bytes, shorter than the 5-byte header")]
    Short(usize),
    /// The message is compressed (the kubelet never compresses; the proxy
    /// does not decompress).
    #[error("gRPC frame: the message is compressed")]
    Compressed,
    /// The header's length and the body's disagree (several messages, or
    /// a truncated one).
    #[error("gRPC frame: header says {header} bytes, body holds {body}")]
    Length {
        /// The length in the header.
        header: usize,
        /// The bytes after the header.
        body: usize,
    },
}

/// The message of a body holding exactly one uncompressed message.
pub fn decode(body: &Bytes) -> Result<Bytes, FrameError> {
    if body.len() < 5 {
        return Err(FrameError::Short(body.len()));
    }
    if body[0] != 0 {
        return Err(FrameError::Compressed);
    }
    let header = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    if header != body.len() - 5 {
        return Err(FrameError::Length { header, body: body.len() - 5 });
    }
    Ok(body.slice(5..))
}

/// One uncompressed message framed: `message` followed by `appended`.
///
/// Protobuf merges concatenated encodings of a message (later singular
/// fields win, maps are merged by key, repeated fields are appended), so
/// appending a patch changes the fields it sets and keeps every other byte
/// of the original, including fields this proxy's protos do not know.
pub fn encode(message: &[u8], appended: &[u8]) -> Bytes {
    let len = message.len() + appended.len();
    let mut out = BytesMut::with_capacity(5 + len);
    out.put_u8(0);
    // A unary CRI message is far below 4 GiB (the kubelet caps it at 16 MiB).
    out.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    out.put_slice(message);
    out.put_slice(appended);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_message_round_trips_and_bad_frames_are_named() {
        let framed = encode(b"abc", b"de");
        assert_eq!(&framed[..], &[0, 0, 0, 0, 5, b'a', b'b', b'c', b'd', b'e']);
        assert_eq!(decode(&framed).unwrap(), Bytes::from_static(b"abcde"));
        assert_eq!(decode(&Bytes::from_static(&[0, 0])), Err(FrameError::Short(2)));
        assert_eq!(decode(&Bytes::from_static(&[1, 0, 0, 0, 1, 7])), Err(FrameError::Compressed));
        assert_eq!(
            decode(&Bytes::from_static(&[0, 0, 0, 0, 3, 7])),
            Err(FrameError::Length { header: 3, body: 1 })
        );
        assert_eq!(decode(&encode(b"", b"")).unwrap(), Bytes::new());
    }

    proptest::proptest! {
        #[test]
        fn decode_never_panics_and_accepts_only_exact_frames(body in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let body = Bytes::from(body);
            if let Ok(msg) = decode(&body) {
                proptest::prop_assert_eq!(encode(&msg, b""), body);
            }
        }
    }
}
