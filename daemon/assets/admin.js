// shortlink admin: copy buttons and confirmations. No inline script (the
// pages' Content-Security-Policy forbids it), no dependencies.
"use strict";

function copyFrom(selector, button) {
  const field = document.querySelector(selector);
  if (!field) return;
  const done = () => {
    const label = button.textContent;
    button.textContent = "Copied";
    button.classList.add("copied");
    setTimeout(() => { button.textContent = label; button.classList.remove("copied"); }, 1500);
  };
  const fallback = () => {
    field.focus();
    field.select();
    try { if (document.execCommand("copy")) done(); } catch (_) { /* left selected to copy by hand */ }
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(done, fallback);
  } else {
    fallback();
  }
}

document.addEventListener("click", (e) => {
  const button = e.target.closest("button[data-copy]");
  if (button) {
    e.preventDefault();
    copyFrom(button.getAttribute("data-copy"), button);
  }
});

document.addEventListener("submit", (e) => {
  const message = e.target.getAttribute("data-confirm");
  if (message && !window.confirm(message)) e.preventDefault();
});

// Select the whole short URL or secret on focus, ready to copy by hand.
document.addEventListener("focusin", (e) => {
  if (e.target.matches("input[readonly]")) e.target.select();
});
