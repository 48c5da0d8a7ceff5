// Shared pieces of the page: toasts, the confirm dialog, the sign-in dialog and the theme toggle.
import { h } from "./dom.js";
import { authorization, setCredentials } from "./api.js";

/** Show a short message; kind "error" for failures. */
export function toast(text, kind = "ok") {
  const el = h("div", { class: `toast ${kind}`, role: kind === "error" ? "alert" : null }, text);
  document.getElementById("toasts").append(el);
  setTimeout(() => el.remove(), kind === "error" ? 9000 : 4000);
}

/** Ask the user to confirm an action; resolves true on Confirm. */
export function confirmAction(text, okLabel = "Confirm") {
  const dialog = document.getElementById("confirm-dialog");
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = okLabel;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
    document.getElementById("confirm-ok").focus();
  });
}

/** Run an API action with feedback: a toast on success, the refusal's reason on failure. */
export async function act(label, fn, after) {
  try {
    await fn();
    toast(label);
    if (after) await after();
    return true;
  } catch (err) {
    toast(`${label} failed: ${err.status ? `${err.status} ` : ""}${err.reason || err.message}`, "error");
    return false;
  }
}

/** Confirm, then act. */
export async function confirmed(question, label, fn, after) {
  if (await confirmAction(question)) return act(label, fn, after);
  return false;
}

let pendingLogin = null;

/** Ask for credentials (token or user and password); resolves true once given. */
export function askLogin(reason) {
  if (pendingLogin) return pendingLogin;
  const dialog = document.getElementById("login-dialog");
  const form = document.getElementById("login-form");
  if (reason) document.getElementById("login-reason").textContent = reason;
  dialog.returnValue = "";
  pendingLogin = new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      pendingLogin = null;
      const data = new FormData(form);
      if (dialog.returnValue === "signout") { setCredentials(null); showIdentity(); resolve(false); return; }
      if (dialog.returnValue !== "ok") { resolve(false); return; }
      if (data.get("method") === "token") setCredentials({ token: data.get("token") || "" });
      else setCredentials({ user: data.get("user") || "", password: data.get("password") || "" });
      form.reset();
      showIdentity();
      resolve(true);
    }, { once: true });
    dialog.showModal();
  });
  return pendingLogin;
}

/** Wire the sign-in dialog's method switch and the header button. */
export function setupLogin() {
  const form = document.getElementById("login-form");
  form.addEventListener("change", () => {
    const method = new FormData(form).get("method");
    for (const el of form.querySelectorAll("[data-method]")) el.hidden = el.dataset.method !== method;
  });
  document.getElementById("login-button").addEventListener("click", () => askLogin().then(() => {
    const choice = document.getElementById("login-dialog").returnValue;
    if (choice === "ok" || choice === "signout") document.dispatchEvent(new CustomEvent("credentialschange"));
  }));
  showIdentity();
}

function showIdentity() {
  const auth = authorization();
  const label = !auth ? "" : auth.startsWith("Basic ") ? `user ${atob(auth.slice(6)).split(":")[0]}` : "token set";
  document.getElementById("identity").textContent = label;
  document.getElementById("login-button").textContent = auth ? "Credentials" : "Sign in";
}

const THEME_KEY = "magnetar.theme";

/** The theme in force: the stored choice, else the system's. */
export function currentTheme() {
  return localStorage.getItem(THEME_KEY) || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
}

/** Apply a theme and label the toggle with the other one. */
export function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  const other = theme === "dark" ? "light" : "dark";
  const button = document.getElementById("theme-toggle");
  button.textContent = other === "dark" ? "Dark" : "Light";
  button.setAttribute("aria-label", `Switch to ${other} theme`);
  window.dispatchEvent(new CustomEvent("themechange"));
}

/** Wire the theme toggle (the choice is remembered in this browser). */
export function setupTheme() {
  applyTheme(currentTheme());
  document.getElementById("theme-toggle").addEventListener("click", () => {
    const next = currentTheme() === "dark" ? "light" : "dark";
    localStorage.setItem(THEME_KEY, next);
    applyTheme(next);
  });
}
