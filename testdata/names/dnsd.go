// dnsd is TestNamesMatrix's DNS server (dnsd ADDR): names under dns.test answer A 10.77.0.1 and
// AAAA fd77::1, over UDP and TCP, names under localhost A 127.0.0.1 (as systemd-resolved); tcp.dns.test answers over UDP with the truncated bit and no
// records, so a resolver asks again over TCP (what a large answer does); any other name is
// NXDOMAIN.
package main

import (
	"encoding/binary"
	"io"
	"log"
	"net"
	"os"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

func answer(q []byte, udp bool) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil {
		return nil
	}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 {
		return nil
	}
	name := strings.ToLower(qs[0].Name.String())
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	known := strings.HasSuffix(name, ".dns.test.")
	loopback := strings.HasSuffix(name, ".localhost.") // as systemd-resolved answers
	known = known || loopback
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	trunc := udp && name == "tcp.dns.test."
	rh.Truncated = trunc
	b := dnsmessage.NewBuilder(nil, rh)
	b.StartQuestions()
	b.Question(qs[0])
	b.StartAnswers()
	if known && !trunc {
		rr := dnsmessage.ResourceHeader{Name: qs[0].Name, Class: dnsmessage.ClassINET, TTL: 60}
		switch qs[0].Type {
		case dnsmessage.TypeA:
			a := [4]byte{10, 77, 0, 1}
			if loopback {
				a = [4]byte{127, 0, 0, 1}
			}
			b.AResource(rr, dnsmessage.AResource{A: a})
		case dnsmessage.TypeAAAA:
			if loopback {
				break
			}
			b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: [16]byte{0xfd, 0x77, 15: 1}})
		}
	}
	out, _ := b.Finish()
	return out
}

func main() {
	addr := os.Args[1]
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					var n uint16
					if binary.Read(c, binary.BigEndian, &n) != nil {
						return
					}
					q := make([]byte, n)
					if _, err := io.ReadFull(c, q); err != nil {
						return
					}
					r := answer(q, false)
					c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(r))), r...))
				}
			}()
		}
	}()
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if r := answer(buf[:n], true); r != nil {
			pc.WriteTo(r, from)
		}
	}
}
