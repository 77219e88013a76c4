// The serial console page: a terminal (xterm.js) that fits the window,
// connected to the machine's console through a single-use ticket. A lost
// connection is retried three times, one, two and three seconds apart; a
// console the platform closed (code 4000) says why and offers "Reconnect".
"use strict";

(function () {
  const box = document.getElementById("terminal");
  if (!box || typeof Terminal === "undefined") return;
  const status = document.getElementById("console-status");
  const again = document.getElementById("console-reconnect");
  const term = new Terminal({ cursorBlink: true, fontSize: 15, scrollback: 5000 });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(box);
  fit.fit();
  window.addEventListener("resize", () => fit.fit());

  let socket = null;
  let retries = 0;
  const encoder = new TextEncoder();

  function say(text, state) {
    status.textContent = text;
    status.dataset.state = state;
  }

  function closed(text) {
    say(text, "closed");
    again.hidden = false;
  }

  function lost(text) {
    retries += 1;
    if (retries > 3) return closed(text + " Reconnect when the machine is back.");
    say(text + " Reconnecting…", "connecting");
    setTimeout(connect, 1000 * retries);
  }

  async function connect() {
    again.hidden = true;
    say("Connecting…", "connecting");
    let answer;
    try {
      answer = await fetch(box.dataset.ticketUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "X-CSRF-Token": csrfToken(), Accept: "application/json" },
      });
    } catch (error) {
      return lost("The platform cannot be reached.");
    }
    const body = await answer.json().catch(() => ({}));
    if (!answer.ok) return closed(body.message || "The console cannot be opened now.");
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + body.url);
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      retries = 0;
      say("Connected. Press Enter if no prompt shows.", "open");
      term.focus();
    };
    socket.onmessage = (event) =>
      term.write(typeof event.data === "string" ? event.data : new Uint8Array(event.data));
    socket.onclose = (event) => {
      socket = null;
      if (event.code === 4000) return closed("The console closed: " + event.reason + ".");
      lost("The connection to the console was lost.");
    };
  }

  term.onData((data) => {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(data));
  });
  again.addEventListener("click", () => {
    retries = 0;
    connect();
  });
  if (box.dataset.start === "true") connect();
  else closed("The machine is not running.");
})();
