import { greet } from "./greet.js";

document.querySelector("#app").textContent = greet("web");
