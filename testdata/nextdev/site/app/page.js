export default function Page() {
  return <p>hello from next</p>;
}
