//! QR codes of short URLs, as SVG (shown on the page and downloadable) and
//! PNG (downloadable). Rendered here from the module matrix so no image
//! library is needed.

use qrcode::{Color, EcLevel, QrCode};

/// Light modules around the code, as the standard asks.
const QUIET_ZONE: usize = 4;

/// Why a QR code could not be made (the text is too long for any version).
#[derive(Debug, thiserror::Error)]
#[error("cannot encode this URL as a QR code: {0}")]
pub struct QrError(String);

/// The module matrix (true = dark) and its width, quiet zone included.
fn matrix(text: &str) -> Result<(Vec<bool>, usize), QrError> {
    let code = QrCode::with_error_correction_level(text.as_bytes(), EcLevel::M)
        .map_err(|e| QrError(e.to_string()))?;
    let inner = code.width();
    let width = inner + 2 * QUIET_ZONE;
    let mut m = vec![false; width * width];
    for (i, c) in code.to_colors().into_iter().enumerate() {
        let (x, y) = (i % inner, i / inner);
        m[(y + QUIET_ZONE) * width + x + QUIET_ZONE] = c == Color::Dark;
    }
    Ok((m, width))
}

/// An SVG of the code, one unit per module, scaled by the viewer.
pub fn svg(text: &str) -> Result<String, QrError> {
    let (m, w) = matrix(text)?;
    let mut path = String::new();
    for y in 0..w {
        let mut x = 0;
        while x < w {
            if !m[y * w + x] {
                x += 1;
                continue;
            }
            // One rectangle per horizontal run of dark modules.
            let run = (x..w).take_while(|&i| m[y * w + i]).count();
            path.push_str(&format!("M{x} {y}h{run}v1h-{run}z"));
            x += run;
        }
    }
    Ok(format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {w}\" width=\"{px}\" height=\"{px}\" \
         shape-rendering=\"crispEdges\"><rect width=\"{w}\" height=\"{w}\" fill=\"#fff\"/>\
         <path fill=\"#000\" d=\"{path}\"/></svg>",
        px = w * 6
    ))
}

/// A grayscale PNG of the code, `scale` pixels per module.
pub fn png(text: &str, scale: usize) -> Result<Vec<u8>, QrError> {
    let (m, w) = matrix(text)?;
    let side = w * scale;
    let mut pixels = Vec::with_capacity(side * side);
    for y in 0..side {
        for x in 0..side {
            pixels.push(if m[(y / scale) * w + x / scale] {
                0
            } else {
                255
            });
        }
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, side as u32, side as u32);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(|e| QrError(e.to_string()))?;
        writer
            .write_image_data(&pixels)
            .map_err(|e| QrError(e.to_string()))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_and_png() {
        let s = svg("https://s.example.com/aZ3kQ9x").unwrap();
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        // Version 3 (29 modules) plus the quiet zone.
        assert!(s.contains("viewBox=\"0 0 37 37\""), "{s}");
        assert!(s.contains("M4 4h7v1h-7z"), "finder pattern's top row: {s}");
        let p = png("https://s.example.com/aZ3kQ9x", 4).unwrap();
        assert_eq!(&p[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR width: 37 modules * 4 px.
        assert_eq!(u32::from_be_bytes(p[16..20].try_into().unwrap()), 148);
        assert!(svg(&"x".repeat(5000)).is_err());
    }
}
