package enforcer

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

func init() { nobodyHelpers["udprelay"] = func(_, work string) error { return udpRelayCheck(work) } }

// A learned UDP destination (an exact address:port) is relayed: a datagram to it reaches the
// host's server and its answer comes back; a datagram to another port of the same address
// does not leave the sandbox. Root and ordinary user.
func TestUDPRelayExactDestination(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testutil.RequireNoErr(t, "python3 (apt-get install python3) sends the datagrams", err)
	}
	asRootAndNobody(t, "udprelay", udpRelayCheck)
}

// udpEcho answers every datagram with "echo " and it, and counts what it got.
func udpEcho() (net.PacketConn, chan string, error) {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	got := make(chan string, 16)
	go func() {
		b := make([]byte, 1500)
		for {
			n, from, err := c.ReadFrom(b)
			if err != nil {
				return
			}
			got <- string(b[:n])
			c.WriteTo(append([]byte("echo "), b[:n]...), from)
		}
	}()
	return c, got, nil
}

const udpScript = `import socket, sys
for port in sys.argv[1:]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    try:
        s.sendto(b"hello " + port.encode(), ("127.0.0.1", int(port)))
        print(port, s.recvfrom(100)[0].decode())
    except OSError as e:
        print(port, "error", type(e).__name__)
`

func udpRelayCheck(work string) error {
	allowed, gotAllowed, err := udpEcho()
	if err != nil {
		return err
	}
	defer allowed.Close()
	other, gotOther, err := udpEcho()
	if err != nil {
		return err
	}
	defer other.Close()
	ap, op := allowed.LocalAddr().(*net.UDPAddr).Port, other.LocalAddr().(*net.UDPAddr).Port
	p := toolProfile("udp-relay")
	p.Network.Send = []policy.Endpoint{{Endpoint: fmt.Sprintf("127.0.0.1:%d", ap), Proto: "udp"}}
	var out, stderr strings.Builder
	_, code, err := Run(context.Background(), Options{Profile: p, Audit: true, Dir: work,
		Command: []string{"/usr/bin/python3", "-c", udpScript, fmt.Sprint(ap), fmt.Sprint(op)},
		Stdout:  &out, Stderr: &stderr})
	if err != nil || code != 0 {
		return fmt.Errorf("run: exit %d, %v\n%s%s", code, err, out.String(), stderr.String())
	}
	if want := fmt.Sprintf("%d echo hello %d\n", ap, ap); !strings.Contains(out.String(), want) {
		return fmt.Errorf("the relayed datagram's answer: output %q, want %q", out.String(), want)
	}
	if strings.Contains(out.String(), fmt.Sprintf("%d echo", op)) {
		return fmt.Errorf("a datagram to a port no rule names was answered: %q", out.String())
	}
	select {
	case g := <-gotAllowed:
		if g != fmt.Sprintf("hello %d", ap) {
			return fmt.Errorf("the host's server got %q", g)
		}
	default:
		return fmt.Errorf("the host's server got nothing: %q", out.String())
	}
	select {
	case g := <-gotOther:
		return fmt.Errorf("a datagram to a port no rule names left the sandbox: %q", g)
	default:
	}
	return nil
}
