//! HPACK (RFC 7541), as much as a client of one connection needs: a decoder for the
//! server's header blocks, with its dynamic table and Huffman strings, and an encoder of
//! plain literals that never touch the server's table.
//!
//! For example, the block `82 86 84 41 8c f1e3c2e5f23a6ba0ab90f4ff` reads
//! `:method: GET`, `:scheme: http` and `:path: /` (static entries 2, 6 and 4), then
//! `:authority` (the static name 1) with a 12-byte Huffman value, `www.example.com`;
//! that last field is added to the dynamic table, where the next block can name it as
//! entry 62.
//!
//! Huffman strings are decoded bit by bit with the canonical form of the code: the
//! code is fully given by each symbol's length (`CODE_LENGTHS`), since codes of one length
//! are consecutive, in symbol order, and each length's first code follows the last one of
//! the length before. Header blocks of gRPC replies are a few dozen bytes, so no table
//! of whole bytes is worth building at start-up.

use std::collections::VecDeque;

/// One decoded field: name and value.
pub type Field = (Vec<u8>, Vec<u8>);

/// The dynamic table size both sides start with (SETTINGS_HEADER_TABLE_SIZE).
const DEFAULT_TABLE_SIZE: usize = 4096;

/// Decodes the header blocks of one connection, in the order they arrive.
pub struct Decoder {
    /// Newest entry first.
    table: VecDeque<Field>,
    size: usize,
    max_size: usize,
    /// The most the peer may set `max_size` to (what this side advertised).
    limit: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::with_limit(DEFAULT_TABLE_SIZE)
    }
}

impl Decoder {
    /// A decoder whose table may grow to `limit` bytes.
    pub fn with_limit(limit: usize) -> Decoder {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max_size: limit,
            limit,
        }
    }

    /// The fields of one complete header block.
    pub fn decode(&mut self, block: &[u8]) -> Result<Vec<Field>, String> {
        let mut fields = Vec::new();
        let mut pos = 0;
        while pos < block.len() {
            let first = block[pos];
            if first & 0x80 != 0 {
                let index = integer(block, &mut pos, 7)?;
                fields.push(self.entry(index)?.clone());
            } else if first & 0xc0 == 0x40 {
                let field = self.literal(block, &mut pos, 6)?;
                self.insert(field.clone());
                fields.push(field);
            } else if first & 0xe0 == 0x20 {
                if !fields.is_empty() {
                    return Err("table size update after a field".into());
                }
                let size = integer(block, &mut pos, 5)?;
                if size > self.limit {
                    return Err(format!("table size {size} above the limit {}", self.limit));
                }
                self.max_size = size;
                self.evict(0);
            } else {
                // Without indexing (0000) or never indexed (0001).
                fields.push(self.literal(block, &mut pos, 4)?);
            }
        }
        Ok(fields)
    }

    /// Entry `index` of the static table (1..=61), then of the dynamic one.
    fn entry(&self, index: usize) -> Result<&Field, String> {
        static STATIC: std::sync::OnceLock<Vec<Field>> = std::sync::OnceLock::new();
        let statics = STATIC.get_or_init(|| {
            STATIC_TABLE
                .iter()
                .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
                .collect()
        });
        match index {
            0 => Err("index 0".into()),
            i if i <= statics.len() => Ok(&statics[i - 1]),
            i => self
                .table
                .get(i - statics.len() - 1)
                .ok_or_else(|| format!("index {i} beyond the table")),
        }
    }

    fn literal(&self, block: &[u8], pos: &mut usize, prefix: u32) -> Result<Field, String> {
        let index = integer(block, pos, prefix)?;
        let name = if index == 0 {
            string(block, pos)?
        } else {
            self.entry(index)?.0.clone()
        };
        Ok((name, string(block, pos)?))
    }

    fn insert(&mut self, field: Field) {
        let size = entry_size(&field);
        self.evict(size);
        if size <= self.max_size {
            self.size += size;
            self.table.push_front(field);
        }
    }

    /// Drops the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max_size {
            match self.table.pop_back() {
                Some(old) => self.size -= entry_size(&old),
                None => break,
            }
        }
    }
}

/// An entry's size as the table counts it: its bytes and 32 more.
fn entry_size((name, value): &Field) -> usize {
    name.len() + value.len() + 32
}

/// An integer with an N-bit prefix, starting at `block[*pos]`.
fn integer(block: &[u8], pos: &mut usize, prefix_bits: u32) -> Result<usize, String> {
    let max = (1usize << prefix_bits) - 1;
    let first = *block.get(*pos).ok_or("truncated integer")? as usize & max;
    *pos += 1;
    if first < max {
        return Ok(first);
    }
    let mut value = max;
    let mut shift = 0;
    loop {
        let byte = *block.get(*pos).ok_or("truncated integer")?;
        *pos += 1;
        if shift > 28 {
            return Err("integer too large".into());
        }
        value += ((byte & 0x7f) as usize) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
    }
}

/// A string literal: raw, or Huffman-coded when its first bit is set.
fn string(block: &[u8], pos: &mut usize) -> Result<Vec<u8>, String> {
    let huffman = *block.get(*pos).ok_or("truncated string")? & 0x80 != 0;
    let len = integer(block, pos, 7)?;
    let bytes = block
        .get(*pos..*pos + len)
        .ok_or("string longer than its block")?;
    *pos += len;
    if huffman {
        huffman_decode(bytes)
    } else {
        Ok(bytes.to_vec())
    }
}

/// The canonical Huffman code, laid out for decoding one bit at a time.
struct Canonical {
    /// Symbols sorted by code length, then by value.
    symbols: [u16; 257],
    /// For each length: its first code, how many codes it has, where they start in
    /// `symbols`.
    first: [u32; 31],
    count: [u32; 31],
    offset: [usize; 31],
}

const CANONICAL: Canonical = canonical();

const fn canonical() -> Canonical {
    let mut c = Canonical {
        symbols: [0; 257],
        first: [0; 31],
        count: [0; 31],
        offset: [0; 31],
    };
    let mut next = 0;
    let mut code = 0u32;
    let mut len = 1;
    while len <= 30 {
        c.first[len] = code;
        c.offset[len] = next;
        let mut symbol = 0;
        while symbol < 257 {
            if CODE_LENGTHS[symbol] as usize == len {
                c.symbols[next] = symbol as u16;
                next += 1;
                c.count[len] += 1;
            }
            symbol += 1;
        }
        code = (code + c.count[len]) << 1;
        len += 1;
    }
    c
}

fn huffman_decode(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(bytes.len() * 8 / 5);
    let mut code = 0u32;
    let mut len = 0usize;
    for byte in bytes {
        for bit in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> bit) & 1);
            len += 1;
            if len > 30 {
                return Err("bad Huffman code".into());
            }
            let index = code.wrapping_sub(CANONICAL.first[len]);
            if code >= CANONICAL.first[len] && index < CANONICAL.count[len] {
                let symbol = CANONICAL.symbols[CANONICAL.offset[len] + index as usize];
                if symbol == 256 {
                    return Err("end-of-string symbol inside a string".into());
                }
                out.push(symbol as u8);
                code = 0;
                len = 0;
            }
        }
    }
    // What is left must be padding: fewer than 8 bits, all ones (the start of EOS).
    if len > 7 || code != (1 << len) - 1 {
        return Err("bad Huffman padding".into());
    }
    Ok(out)
}

/// Appends a literal field without indexing: the name by its static-table `index`, or
/// spelled out when `index` is 0. Strings are raw (not Huffman-coded).
pub fn encode_literal(out: &mut Vec<u8>, index: usize, name: &[u8], value: &[u8]) {
    encode_integer(out, 0x00, 4, index);
    if index == 0 {
        encode_integer(out, 0x00, 7, name.len());
        out.extend_from_slice(name);
    }
    encode_integer(out, 0x00, 7, value.len());
    out.extend_from_slice(value);
}

/// Appends a fully indexed field: static-table entry `index`.
pub fn encode_indexed(out: &mut Vec<u8>, index: usize) {
    encode_integer(out, 0x80, 7, index);
}

/// An integer with an N-bit prefix, after the bits of `flags`.
fn encode_integer(out: &mut Vec<u8>, flags: u8, prefix_bits: u32, value: usize) {
    let max = (1usize << prefix_bits) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// The static table of RFC 7541, appendix A (index 1 first).
const STATIC_TABLE: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The length in bits of each symbol's Huffman code (RFC 7541, appendix B); symbol 256
/// is the end of string.
const CODE_LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn text(fields: &[Field]) -> Vec<(String, String)> {
        fields
            .iter()
            .map(|(n, v)| {
                (
                    String::from_utf8(n.clone()).unwrap(),
                    String::from_utf8(v.clone()).unwrap(),
                )
            })
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn requests_with_huffman_share_the_dynamic_table() {
        // RFC 7541, C.4.1 to C.4.3.
        let mut d = Decoder::default();
        let first = d
            .decode(&hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"))
            .unwrap();
        assert_eq!(
            text(&first),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
            ])
        );
        assert_eq!(d.size, 57);
        let second = d.decode(&hex("8286 84be 5886 a8eb 1064 9cbf")).unwrap();
        assert_eq!(second[3], first[3]);
        assert_eq!(text(&second[4..]), pairs(&[("cache-control", "no-cache")]));
        assert_eq!(d.size, 110);
        let third = d
            .decode(&hex(
                "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
            ))
            .unwrap();
        assert_eq!(
            text(&third),
            pairs(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ])
        );
        assert_eq!(d.size, 164);
    }

    #[test]
    fn responses_evict_the_oldest_entries() {
        // RFC 7541, C.6.1 and C.6.2, with a 256-byte table.
        let mut d = Decoder::with_limit(256);
        let first = d
            .decode(&hex(
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            ))
            .unwrap();
        assert_eq!(
            text(&first),
            pairs(&[
                (":status", "302"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com"),
            ])
        );
        assert_eq!(d.size, 222);
        let second = d.decode(&hex("4883 640e ff c1 c0 bf")).unwrap();
        assert_eq!(text(&second)[0], (":status".into(), "307".into()));
        assert_eq!(second[1..], first[1..]);
        // `:status: 302` made room for `:status: 307`.
        assert_eq!(d.size, 222);
        assert_eq!(d.table.len(), 4);
    }

    #[test]
    fn bad_blocks_are_errors() {
        let mut d = Decoder::default();
        // Index 0, an index beyond both tables, a truncated string, a string that is
        // not valid Huffman (all-ones padding longer than 7 bits), a late size update.
        for block in ["80", "bf", "0f10 85 aa", "0f10 82 ffff", "88 20"] {
            assert!(d.decode(&hex(block)).is_err(), "{block}");
        }
        // A size update above what this side allows.
        assert!(d.decode(&hex("3fe1 3f")).is_err());
    }

    #[test]
    fn literals_decode_back() {
        let mut out = Vec::new();
        encode_indexed(&mut out, 3);
        encode_literal(&mut out, 4, b"", b"/drover.v1.Ctld/SubmitJob");
        let long = "x".repeat(300);
        encode_literal(&mut out, 0, b"grpc-message", long.as_bytes());
        let fields = Decoder::default().decode(&out).unwrap();
        assert_eq!(
            text(&fields),
            pairs(&[
                (":method", "POST"),
                (":path", "/drover.v1.Ctld/SubmitJob"),
                ("grpc-message", &long),
            ])
        );
    }
}
