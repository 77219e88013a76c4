// Kite's session player page: puts the recording named by #player's
// data-cast into asciinema-player (vendored, see vendor/asciinema-player):
// a kept recording is fetched whole; a live one follows the server-sent
// events of /api/v1/ssh-sessions/{id}/recordings/{channel}/live.
"use strict";

window.kiteErrors = window.kiteErrors || [];

function showPlayerError(message) {
  const alert = document.getElementById("player-error");
  if (alert) {
    alert.textContent = message;
    alert.hidden = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const element = document.getElementById("player");
  if (!element || !window.AsciinemaPlayer) {
    showPlayerError("The player could not be loaded; reload the page.");
    return;
  }
  const live = element.dataset.castLive === "true";
  const source = live
    ? { driver: "eventsource", url: element.dataset.cast, bufferTime: 0 }
    : { url: element.dataset.cast, fetchOpts: { credentials: "same-origin" } };
  try {
    window.kitePlayer = window.AsciinemaPlayer.create(source, element, {
      autoPlay: true,
      fit: "width",
      idleTimeLimit: live ? undefined : 2,
      terminalFontSize: "small",
    });
  } catch (error) {
    window.kiteErrors.push(String(error));
    showPlayerError("The recording could not be played.");
  }
});
