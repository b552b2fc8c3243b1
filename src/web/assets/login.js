// After logging in, come back to the page that asked for it (path and #fragment). After a
// wrong token the page is /login, and the server has kept the page to return to.
if (location.pathname !== "/login") {
  document.getElementById("next").value = location.pathname + location.hash;
}
