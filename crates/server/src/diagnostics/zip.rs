//! A minimal ZIP writer: stored (uncompressed) entries, which every ZIP
//! reader accepts whatever compression the client asked for. Enough for the
//! diagnostics snapshot; no ZIP64, so the archive stays under 4 GiB (the
//! frame cap is far lower).
//!
//! ```text
//! per entry:  local header (30 bytes + name) | data
//! then:       central directory (46 bytes + name per entry)
//!             end of central directory (22 bytes)
//! ```

const LOCAL_SIGNATURE: u32 = 0x0403_4b50;
const CENTRAL_SIGNATURE: u32 = 0x0201_4b50;
const END_SIGNATURE: u32 = 0x0605_4b50;
/// Version 2.0: what stored entries need.
const VERSION: u16 = 20;
/// 1980-01-01 00:00 in DOS date/time.
const DOS_DATE: u16 = (1 << 5) | 1;

const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

static CRC_TABLE: [u32; 256] = crc_table();

/// CRC-32 (IEEE), as ZIP uses it.
pub fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |c, &b| {
        CRC_TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

#[derive(Default)]
pub struct ZipWriter {
    out: Vec<u8>,
    central: Vec<u8>,
    entries: u16,
}

impl ZipWriter {
    pub fn add(&mut self, name: &str, data: &[u8]) {
        let offset = u32::try_from(self.out.len()).expect("archives stay below 4 GiB");
        let size = u32::try_from(data.len()).expect("entries stay below 4 GiB");
        let crc = crc32(data);
        let name_len = u16::try_from(name.len()).expect("short entry names");
        let mut local = Vec::with_capacity(30 + name.len());
        put32(&mut local, LOCAL_SIGNATURE);
        for v in [VERSION, 0, 0, 0, DOS_DATE] {
            put16(&mut local, v);
        }
        for v in [crc, size, size] {
            put32(&mut local, v);
        }
        put16(&mut local, name_len);
        put16(&mut local, 0);
        local.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(&local);
        self.out.extend_from_slice(data);

        put32(&mut self.central, CENTRAL_SIGNATURE);
        for v in [VERSION, VERSION, 0, 0, 0, DOS_DATE] {
            put16(&mut self.central, v);
        }
        for v in [crc, size, size] {
            put32(&mut self.central, v);
        }
        for v in [name_len, 0, 0, 0, 0] {
            put16(&mut self.central, v);
        }
        put32(&mut self.central, 0);
        put32(&mut self.central, offset);
        self.central.extend_from_slice(name.as_bytes());
        self.entries += 1;
    }

    pub fn finish(mut self) -> Vec<u8> {
        let central_offset = u32::try_from(self.out.len()).expect("archives stay below 4 GiB");
        let central_size = u32::try_from(self.central.len()).expect("archives stay below 4 GiB");
        self.out.extend_from_slice(&self.central);
        put32(&mut self.out, END_SIGNATURE);
        for v in [0, 0, self.entries, self.entries] {
            put16(&mut self.out, v);
        }
        put32(&mut self.out, central_size);
        put32(&mut self.out, central_offset);
        put16(&mut self.out, 0);
        self.out
    }
}

fn put16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_known_input_when_hashing_should_match_crc32_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn given_two_entries_when_finishing_should_lay_out_headers_and_directory() {
        let mut zip = ZipWriter::default();
        zip.add("a.txt", b"hello");
        zip.add("b.txt", b"");
        let bytes = zip.finish();
        assert_eq!(&bytes[..4], &LOCAL_SIGNATURE.to_le_bytes());
        assert_eq!(&bytes[30..35], b"a.txt");
        assert_eq!(&bytes[35..40], b"hello");
        let end = &bytes[bytes.len() - 22..];
        assert_eq!(&end[..4], &END_SIGNATURE.to_le_bytes());
        assert_eq!(u16::from_le_bytes([end[10], end[11]]), 2);
        let central_offset = u32::from_le_bytes(end[16..20].try_into().unwrap()) as usize;
        assert_eq!(
            &bytes[central_offset..central_offset + 4],
            &CENTRAL_SIGNATURE.to_le_bytes()
        );
    }
}
