//! Cross-module tests: the spec's section 13 exchange as golden fixtures,
//! and a fuzz-style sweep over every decoder.

mod fuzz;
mod section13;

/// A 16-byte aligned header buffer, so the SDK's zero-copy casts accept it.
#[repr(C, align(16))]
pub(crate) struct Aligned(pub [u8; 256]);

/// Parses a hex dump in the spec's format: `0000: 00 2c ...` lines, and
/// `aaaa..bbbb: all 00` lines standing for that many zero bytes. Text after
/// the sixteenth byte of a line (an annotation) is ignored.
pub(crate) fn dump(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (address, rest) = line.split_once(':').expect("dump lines have an address");
        if let Some((from, to)) = address.split_once("..") {
            assert!(
                rest.trim() == "all 00",
                "range lines stand for zeros: {line}"
            );
            let from = usize::from_str_radix(from, 16).expect("hex address");
            let to = usize::from_str_radix(to, 16).expect("hex address");
            assert_eq!(out.len(), from, "range starts where the dump is: {line}");
            out.resize(to + 1, 0);
            continue;
        }
        let at = usize::from_str_radix(address, 16).expect("hex address");
        assert_eq!(out.len(), at, "line starts where the dump is: {line}");
        for token in rest.split_whitespace().take(16) {
            match u8::from_str_radix(token, 16) {
                Ok(byte) if token.len() == 2 => out.push(byte),
                _ => break,
            }
        }
    }
    out
}

#[test]
fn given_dump_text_when_parsing_should_expand_ranges_and_skip_notes() {
    let bytes = dump("0000..000f: all 00\n0010: 01 02 ff   note here\n");
    assert_eq!(bytes.len(), 19);
    assert_eq!(&bytes[16..], &[1, 2, 0xff]);
}
