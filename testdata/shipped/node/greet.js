// A tiny module for the shipped npm-test profile's fixture.
"use strict";

function greeting(name) {
  return "hello, " + String(name).trim();
}

module.exports = { greeting };
