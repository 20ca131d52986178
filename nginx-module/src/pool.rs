//! Copies into a request's pool.

use nginx_sys::ngx_str_t;
use ngx::core::Pool;

/// `len` bytes of the request pool, filled by `fill`, valid for the
/// request's life.
pub fn pool_fill(pool: &Pool, len: usize, fill: impl FnOnce(&mut [u8])) -> Option<ngx_str_t> {
    let data = pool.alloc_unaligned(len).cast::<u8>();
    if data.is_null() {
        return None;
    }
    // SAFETY: data has room for len bytes, owned by this request alone.
    fill(unsafe { core::slice::from_raw_parts_mut(data, len) });
    Some(ngx_str_t { len, data })
}

/// A copy of `bytes` in the request pool, valid for the request's life.
pub fn pool_copy(pool: &Pool, bytes: &[u8]) -> Option<ngx_str_t> {
    let data = pool.alloc_unaligned(bytes.len()).cast::<u8>();
    if data.is_null() {
        return None;
    }
    // SAFETY: data has room for bytes.len() bytes.
    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len()) };
    Some(ngx_str_t {
        len: bytes.len(),
        data,
    })
}
