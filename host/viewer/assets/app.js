// Placeholder: the front end replaces this file.
fetch("/api/runs").then((r) => r.json()).then((data) => {
  document.getElementById("app").textContent = data.runs.length + " runs";
});
