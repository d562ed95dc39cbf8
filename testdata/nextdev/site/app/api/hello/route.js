import { greet } from "../../../lib/greet.js";

export function GET() {
  return Response.json({ greeting: greet("next") });
}
