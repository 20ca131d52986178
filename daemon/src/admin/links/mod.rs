//! Link pages: the searchable list, the create form, bulk create, CSV import and export, the detail page (short
//! URL, QR code, charts, breakdowns, edit form, disable, delete).
//!
//! Every change calls the link operations ([`crate::links::Links`]) like
//! the API does: the same rules, the same error messages (shown next to the
//! field), the same push to the nginx workers before the page answers.

mod actions;
mod bulk;
mod create;
mod csv_file;
mod detail;
mod form;
mod list;
mod qr_image;

pub use actions::{delete, disable, edit, enable};
pub use bulk::{bulk_create, bulk_form};
pub use create::{create, new_form};
pub use csv_file::{csv_page, export_csv, import_csv};
pub use detail::detail;
pub use form::LinkForm;
pub use list::{list, ListParams, PAGE_SIZE};
pub use qr_image::{qr_png, qr_svg, QrParams};
