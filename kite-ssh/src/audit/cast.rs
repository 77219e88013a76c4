//! asciicast v2, the format asciinema plays: a header line, then one JSON
//! array per event, `[seconds, code, data]`, with `o` for output, `i` for
//! input, `r` for a resize (`"COLSxROWS"`) and `m` for a marker.
//!
//! Output arrives in chunks that may cut a multi-byte character in two: the
//! incomplete end of a chunk is held for the next one, so every character
//! is written whole (bytes that are not UTF-8 at all become U+FFFD).

use serde_json::json;
use std::time::Instant;

/// What a recording's header says.
#[derive(Debug, Clone, PartialEq)]
pub struct CastHeader {
    /// Terminal columns.
    pub width: u32,
    /// Terminal rows.
    pub height: u32,
    /// When the recording started, in seconds since the Unix epoch.
    pub timestamp: i64,
    /// The command, for an `exec` session.
    pub command: Option<String>,
    /// `TERM`, when the session asked for a terminal.
    pub term: Option<String>,
    /// A title: who, on which machine.
    pub title: String,
}

impl CastHeader {
    /// The header line.
    pub fn line(&self) -> String {
        let mut header = json!({"version": 2, "width": self.width, "height": self.height, "timestamp": self.timestamp, "title": self.title});
        if let Some(command) = &self.command {
            header["command"] = json!(command);
        }
        if let Some(term) = &self.term {
            header["env"] = json!({"TERM": term});
        }
        header.to_string()
    }
}

/// Turns a channel's bytes into event lines, keeping characters whole.
#[derive(Debug)]
pub struct CastEncoder {
    started: Instant,
    output_tail: Vec<u8>,
    input_tail: Vec<u8>,
}

impl Default for CastEncoder {
    fn default() -> Self {
        Self::new()
    }
}

impl CastEncoder {
    /// An encoder whose time starts now.
    pub fn new() -> Self {
        Self { started: Instant::now(), output_tail: Vec::new(), input_tail: Vec::new() }
    }

    fn event(&self, code: &str, data: &str) -> String {
        let seconds = (self.started.elapsed().as_secs_f64() * 1e6).round() / 1e6;
        json!([seconds, code, data]).to_string()
    }

    /// The `o` event of an output chunk; `None` when the chunk only began a character.
    pub fn output(&mut self, bytes: &[u8]) -> Option<String> {
        let text = take_whole(&mut self.output_tail, bytes)?;
        Some(self.event("o", &text))
    }

    /// The `i` event of an input chunk; `None` when the chunk only began a character.
    pub fn input(&mut self, bytes: &[u8]) -> Option<String> {
        let text = take_whole(&mut self.input_tail, bytes)?;
        Some(self.event("i", &text))
    }

    /// The `r` event of a resize.
    pub fn resize(&self, cols: u32, rows: u32) -> String {
        self.event("r", &format!("{cols}x{rows}"))
    }

    /// The last events: what is left of a cut character, then a marker
    /// saying how the session ended.
    pub fn finish(&mut self, how: &str) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.output_tail.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.output_tail)).into_owned();
            lines.push(self.event("o", &rest));
        }
        lines.push(self.event("m", how));
        lines
    }
}

/// Appends `bytes` to `tail` and takes out the longest prefix that ends on
/// a whole character; an incomplete character at the end stays in `tail`.
fn take_whole(tail: &mut Vec<u8>, bytes: &[u8]) -> Option<String> {
    tail.extend_from_slice(bytes);
    let mut text = String::new();
    let mut rest: &[u8] = tail;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                text.push_str(valid);
                rest = &[];
                break;
            }
            Err(error) => {
                let (valid, after) = rest.split_at(error.valid_up_to());
                text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match error.error_len() {
                    // Not UTF-8 at all: one replacement character, and go on.
                    Some(bad) => {
                        text.push(char::REPLACEMENT_CHARACTER);
                        rest = &after[bad..];
                    }
                    // A character cut at the end: keep it for the next chunk.
                    None => {
                        rest = after;
                        break;
                    }
                }
            }
        }
    }
    let kept = rest.to_vec();
    *tail = kept;
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(line: &str) -> (String, String) {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        (event[1].as_str().unwrap().to_string(), event[2].as_str().unwrap().to_string())
    }

    #[test]
    fn a_character_cut_between_chunks_is_written_whole() {
        let mut cast = CastEncoder::new();
        let e_acute = "é".as_bytes();
        assert_eq!(data(&cast.output(&[b'h', e_acute[0]]).unwrap()), ("o".into(), "h".into()));
        assert_eq!(cast.output(&e_acute[1..][..0]), None);
        assert_eq!(data(&cast.output(&[e_acute[1], b'l']).unwrap()), ("o".into(), "él".into()));
        let snowman = "☃".as_bytes();
        assert_eq!(cast.output(&snowman[..1]), None, "a chunk that only begins a character writes nothing");
        assert_eq!(data(&cast.output(&snowman[1..]).unwrap()).1, "☃");
    }

    #[test]
    fn bytes_that_are_not_utf8_become_replacement_characters_and_the_rest_survives() {
        let mut cast = CastEncoder::new();
        assert_eq!(data(&cast.output(b"a\xffb").unwrap()).1, "a\u{fffd}b");
        assert_eq!(cast.output(&[0xe2, 0x98]), None);
        let last = cast.finish("exit 0");
        assert_eq!(data(&last[0]).1, "\u{fffd}", "a character still cut at the end is written, replaced");
        assert_eq!(data(&last[1]), ("m".into(), "exit 0".into()));
    }

    #[test]
    fn the_header_and_a_resize_are_asciicast_v2() {
        let header = CastHeader {
            width: 80,
            height: 24,
            timestamp: 1_764_921_600,
            command: Some("top".into()),
            term: Some("xterm-256color".into()),
            title: "alice on web".into(),
        };
        let parsed: serde_json::Value = serde_json::from_str(&header.line()).unwrap();
        assert_eq!(parsed["version"], 2);
        assert_eq!((parsed["width"].as_u64(), parsed["height"].as_u64()), (Some(80), Some(24)));
        assert_eq!(parsed["env"]["TERM"], "xterm-256color");
        assert_eq!(data(&CastEncoder::new().resize(100, 40)), ("r".into(), "100x40".into()));
    }
}
