//! QR codes of short URLs, drawn by the `qrcode` crate's own renderers: SVG
//! (shown on the page and downloadable) and PNG (downloadable, encoded by
//! `image`).

use std::io::Cursor;

use image::{ImageFormat, Luma};
use qrcode::render::svg;
use qrcode::{EcLevel, QrCode};

/// What the SVG renderer puts before `<svg`: needed by neither the page,
/// which embeds the SVG inline, nor the `image/svg+xml` download.
const XML_DECLARATION: &str = r#"<?xml version="1.0" standalone="yes"?>"#;

/// Why a QR code could not be made.
#[derive(Debug, thiserror::Error)]
pub enum QrError {
    /// The text is too long for any QR version.
    #[error("cannot encode this URL as a QR code: {0}")]
    Encode(#[from] qrcode::types::QrError),
    /// The image would be wider than [`MAX_PNG_PIXELS`].
    #[error("the QR code would be {0} pixels wide; at most {MAX_PNG_PIXELS}: use a smaller scale")]
    TooLarge(u32),
    /// The PNG encoder failed.
    #[error("cannot write the QR code as PNG: {0}")]
    Png(#[from] image::ImageError),
}

fn code(text: &str) -> Result<QrCode, QrError> {
    Ok(QrCode::with_error_correction_level(
        text.as_bytes(),
        EcLevel::M,
    )?)
}

/// An SVG of the code (quiet zone included), one unit per module, scaled
/// by the viewer.
pub fn svg(text: &str) -> Result<String, QrError> {
    let svg = code(text)?
        .render::<svg::Color<'_>>()
        .module_dimensions(1, 1)
        .build();
    Ok(match svg.strip_prefix(XML_DECLARATION) {
        Some(svg) => svg.to_string(),
        None => svg,
    })
}

/// Widest PNG drawn (about 4 MB of pixels): a long URL at a large scale
/// would otherwise allocate tens of megabytes per request.
pub const MAX_PNG_PIXELS: u32 = 2048;

/// A grayscale PNG of the code (quiet zone included), `scale` pixels per
/// module, at most [`MAX_PNG_PIXELS`] wide.
pub fn png(text: &str, scale: u32) -> Result<Vec<u8>, QrError> {
    let code = code(text)?;
    // The renderer adds a quiet zone of 4 modules on each side.
    let width = (code.width() as u32 + 8).saturating_mul(scale);
    if width > MAX_PNG_PIXELS {
        return Err(QrError::TooLarge(width));
    }
    let image = code
        .render::<Luma<u8>>()
        .module_dimensions(scale, scale)
        .build();
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, ImageFormat::Png)?;
    Ok(out.into_inner())
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
        // The finder pattern's top row: 7 dark modules from (4, 4), then
        // its light separator.
        for x in 4..11 {
            assert!(s.contains(&format!("M{x} 4h1v1H{x}V4")), "x={x}: {s}");
        }
        assert!(!s.contains("M11 4h1v1H11V4"), "{s}");
        assert!(!s.contains("M3 4h1v1H3V4"), "quiet zone: {s}");
        let p = png("https://s.example.com/aZ3kQ9x", 4).unwrap();
        assert_eq!(&p[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR width: 37 modules * 4 px.
        assert_eq!(u32::from_be_bytes(p[16..20].try_into().unwrap()), 148);
        assert!(svg(&"x".repeat(5000)).is_err());
        // A 2,000-byte URL at scale 40 would be over 7,000 pixels wide.
        let long = format!("https://e.com/{}", "a".repeat(2000));
        assert!(matches!(png(&long, 40), Err(QrError::TooLarge(w)) if w > 7000));
        assert!(png(&long, 8).is_ok());
    }
}
