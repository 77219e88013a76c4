// Kite's web UI script: sends forms and buttons to the JSON API, refreshes
// the live parts of a page, copies text. No framework, no build step.
"use strict";

// Errors are kept where the browser test can read them.
window.kiteErrors = [];
window.addEventListener("error", (event) => window.kiteErrors.push(String(event.message)));
window.addEventListener("unhandledrejection", (event) => window.kiteErrors.push(String(event.reason)));

function csrfToken() {
  // `__Host-kite_csrf` over HTTPS, `kite_csrf` over plain HTTP.
  for (const name of ["__Host-kite_csrf=", "kite_csrf="]) {
    const found = document.cookie.split("; ").find((c) => c.startsWith(name));
    if (found) return decodeURIComponent(found.slice(name.length));
  }
  return "";
}

// Calls the API: "METHOD /path" with an optional JSON body; resolves to {ok, status, body}.
async function api(request, body) {
  const [method, path] = request.split(" ");
  const headers = { "X-CSRF-Token": csrfToken() };
  const init = { method, headers, credentials: "same-origin" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    return { ok: false, status: 0, body: { message: "The server cannot be reached; check your connection and try again." } };
  }
  let answer = {};
  try {
    answer = await response.json();
  } catch (error) {
    answer = {};
  }
  return { ok: response.ok, status: response.status, body: answer };
}

function showAlert(near, message) {
  const scope = near.closest("form, section, main") || document.body;
  const alert = scope.querySelector("[role=alert]");
  if (alert) {
    alert.textContent = message;
    alert.hidden = !message;
  }
}

function after(then) {
  if (!then || then === "reload") {
    window.location.reload();
  } else {
    window.location.assign(then);
  }
}

function formBody(form) {
  const body = {};
  for (const input of form.querySelectorAll("input[name], select[name], textarea[name]")) {
    if (input.disabled) continue;
    const type = input.dataset.type;
    if (type === "boolean") {
      body[input.name] = input.checked;
    } else if (input.value === "") {
      continue;
    } else if (type === "number") {
      body[input.name] = Number(input.value);
    } else if (type === "lines") {
      body[input.name] = input.value.split("\n").map((line) => line.trim()).filter((line) => line !== "");
    } else {
      body[input.name] = input.value;
    }
  }
  return form.dataset.nest ? { [form.dataset.nest]: body } : body;
}

document.addEventListener("submit", async (event) => {
  const form = event.target.closest("form[data-api]");
  if (!form) return;
  event.preventDefault();
  const button = form.querySelector("button[type=submit]");
  if (button) button.disabled = true;
  showAlert(form, "");
  const result = await api(form.dataset.api, formBody(form));
  if (button) button.disabled = false;
  if (result.ok) {
    after(form.dataset.then);
  } else {
    showAlert(form, result.body.message || "That did not work (" + result.status + ").");
  }
});

document.addEventListener("click", async (event) => {
  const copy = event.target.closest("[data-copy]");
  if (copy) {
    const source = document.querySelector(copy.dataset.copy);
    const text = source ? source.textContent : "";
    try {
      await navigator.clipboard.writeText(text);
      copy.textContent = "Copied";
    } catch (error) {
      const range = document.createRange();
      range.selectNodeContents(source);
      window.getSelection().removeAllRanges();
      window.getSelection().addRange(range);
      copy.textContent = "Selected: press Ctrl-C";
    }
    return;
  }
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  if (button.dataset.confirm && !window.confirm(button.dataset.confirm)) return;
  button.disabled = true;
  const body = button.dataset.body ? JSON.parse(button.dataset.body) : undefined;
  const result = await api(button.dataset.action, body);
  button.disabled = false;
  if (result.ok) {
    if (button.dataset.then) {
      after(button.dataset.then);
    } else {
      refreshAll();
    }
  } else {
    showAlert(button, result.body.message || "That did not work (" + result.status + ").");
  }
});

document.addEventListener("change", async (event) => {
  const select = event.target.closest("select[data-level-of]");
  if (!select) return;
  const result = await api("PATCH /api/v1/admin/users/" + encodeURIComponent(select.dataset.levelOf) + "/access-level", {
    access_level: Number(select.value),
  });
  showAlert(select, result.ok ? "" : result.body.message || "The level did not change.");
  if (!result.ok) window.location.reload();
});

// Live parts: re-rendered by the server every two seconds.
async function refresh(element) {
  let response;
  try {
    response = await fetch(element.dataset.live, { credentials: "same-origin" });
  } catch (error) {
    return;
  }
  if (response.status === 401 || response.redirected) {
    window.location.assign("/login");
    return;
  }
  const html = await response.text();
  if (element.dataset.rendered !== html) {
    element.dataset.rendered = html;
    element.innerHTML = html;
  }
}

function refreshAll() {
  for (const element of document.querySelectorAll("[data-live]")) refresh(element);
}

if (document.querySelector("[data-live]")) {
  setInterval(refreshAll, 2000);
}
