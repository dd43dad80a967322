//! Little-endian appends onto a `Vec<u8>`.

/// Appends wire values. Implemented for `Vec<u8>`, the buffer every encoder
/// in this crate writes into.
pub trait WireWrite {
    fn put_u8(&mut self, value: u8);
    fn put_u16_le(&mut self, value: u16);
    fn put_u32_le(&mut self, value: u32);
    fn put_u64_le(&mut self, value: u64);
    fn put_u128_le(&mut self, value: u128);
    fn put_f32_le(&mut self, value: f32);
    fn put_bytes(&mut self, bytes: &[u8]);

    fn put_bool(&mut self, value: bool) {
        self.put_u8(u8::from(value));
    }

    /// A length as `u32`. Wire lengths never exceed 4 GiB: frames are
    /// bounded far below that, so a larger one is a programming error.
    fn put_len_u32(&mut self, len: usize) {
        let len = u32::try_from(len).expect("wire lengths fit in u32: frames are far smaller");
        self.put_u32_le(len);
    }

    /// A `u32`-length-prefixed string ("u32-string").
    fn put_u32_str(&mut self, value: &str) {
        self.put_len_u32(value.len());
        self.put_bytes(value.as_bytes());
    }

    /// A `u32`-length-prefixed byte block.
    fn put_u32_bytes(&mut self, value: &[u8]) {
        self.put_len_u32(value.len());
        self.put_bytes(value);
    }
}

impl WireWrite for Vec<u8> {
    fn put_u8(&mut self, value: u8) {
        self.push(value);
    }
    fn put_u16_le(&mut self, value: u16) {
        self.extend_from_slice(&value.to_le_bytes());
    }
    fn put_u32_le(&mut self, value: u32) {
        self.extend_from_slice(&value.to_le_bytes());
    }
    fn put_u64_le(&mut self, value: u64) {
        self.extend_from_slice(&value.to_le_bytes());
    }
    fn put_u128_le(&mut self, value: u128) {
        self.extend_from_slice(&value.to_le_bytes());
    }
    fn put_f32_le(&mut self, value: f32) {
        self.extend_from_slice(&value.to_le_bytes());
    }
    fn put_bytes(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}
