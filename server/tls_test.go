package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testPKI is a certificate authority with a server certificate for
// 127.0.0.1 and a client certificate, written as PEM files in dir.
type testPKI struct {
	dir                           string
	caFile, serverCert, serverKey string
	clientCert, clientKey         string
	roots                         *x509.CertPool
	client                        tls.Certificate
}

// newTestPKI makes a testPKI in a temporary directory of t's.
func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir(), roots: x509.NewCertPool()}
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "presenced test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.roots.AddCert(ca)
	p.caFile = p.writePEM(t, "ca.pem", "CERTIFICATE", caDER)
	issue := func(name string, serial int64, usage []x509.ExtKeyUsage, ips []net.IP) (string, string) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return p.writePEM(t, name+".pem", "CERTIFICATE", der), p.writePEM(t, name+".key", "EC PRIVATE KEY", keyDER)
	}
	// The server's certificate serves a node as a client of the others
	// too (tls-cluster).
	p.serverCert, p.serverKey = issue("server", 2, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, []net.IP{net.IPv4(127, 0, 0, 1)})
	p.clientCert, p.clientKey = issue("client", 3, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil)
	if p.client, err = tls.LoadX509KeyPair(p.clientCert, p.clientKey); err != nil {
		t.Fatal(err)
	}
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// writePEM writes der as a PEM block of kind to name in p's directory.
func (p *testPKI) writePEM(t *testing.T, name, kind string, der []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tlsConfig is the server's TLS settings with p's files.
func (p *testPKI) tlsConfig(auth string) *TLSConfig {
	return &TLSConfig{CertFile: p.serverCert, KeyFile: p.serverKey, CACertFile: p.caFile, AuthClients: auth}
}

// TestTLSClients serves clients over TLS beside plain TCP: go-redis and
// redis-cli with the client certificate tls-auth-clients yes asks for,
// a client without one refused, plain RESP on the TLS port answered
// nothing, and CONFIG GET reporting the settings.
func TestTLSClients(t *testing.T) {
	p := newTestPKI(t)
	srv := startServer(t, func(c *Config) { c.TLS = p.tlsConfig("yes") })
	ctx := context.Background()

	rdb := redis.NewClient(&redis.Options{Addr: srv.TLSAddr(), TLSConfig: &tls.Config{RootCAs: p.roots, Certificates: []tls.Certificate{p.client}}})
	defer rdb.Close()
	pipe := rdb.Pipeline()
	for i := range 100 {
		pipe.SetBit(ctx, "online", int64(i*7), 1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("SETBIT pipeline over TLS: %v", err)
	}
	if n, err := rdb.BitCount(ctx, "online", nil).Result(); err != nil || n != 100 {
		t.Fatalf("BITCOUNT over TLS: %d, %v", n, err)
	}
	sub := rdb.Subscribe(ctx, "ch")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Publish(ctx, "ch", "hi").Err(); err != nil {
		t.Fatal(err)
	}
	if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "hi" {
		t.Fatalf("message over TLS: %v, %v", msg, err)
	}

	plain := dial(t, srv.Addr())
	plain.expect(":100\r\n", "BITCOUNT", "online")
	for name, want := range map[string]string{"tls-port": "0", "tls-auth-clients": "yes", "tls-ca-cert-file": p.caFile, "tls-cert-file": p.serverCert} {
		plain.expect("*2\r\n"+bulk(name)+bulk(want), "CONFIG", "GET", name)
	}

	anon := redis.NewClient(&redis.Options{Addr: srv.TLSAddr(), TLSConfig: &tls.Config{RootCAs: p.roots}, MaxRetries: -1})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err == nil {
		t.Error("a client without a certificate was served with tls-auth-clients yes")
	}

	expectNoPlainPong(t, srv.TLSAddr(), "the TLS port")

	_, port, _ := net.SplitHostPort(srv.TLSAddr())
	out, err := osexec.Command("redis-cli", "--tls", "--cacert", p.caFile, "--cert", p.clientCert, "--key", p.clientKey,
		"-h", "127.0.0.1", "-p", port, "BITCOUNT", "online").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "100" {
		t.Errorf("redis-cli --tls: %q, %v", out, err)
	}
}

// TestTLSOptionalClientCert checks tls-auth-clients optional and no: a
// client without a certificate is served.
func TestTLSOptionalClientCert(t *testing.T) {
	p := newTestPKI(t)
	for _, auth := range []string{"optional", "no"} {
		srv := startServer(t, func(c *Config) { c.TLS = p.tlsConfig(auth) })
		rdb := redis.NewClient(&redis.Options{Addr: srv.TLSAddr(), TLSConfig: &tls.Config{RootCAs: p.roots}})
		if got, err := rdb.Ping(context.Background()).Result(); err != nil || got != "PONG" {
			t.Errorf("tls-auth-clients %s, no client certificate: %q, %v", auth, got, err)
		}
		rdb.Close()
	}
}

// TestTLSConfigRefused checks the settings a TLS port cannot start with,
// and that the error names what is wrong.
func TestTLSConfigRefused(t *testing.T) {
	p := newTestPKI(t)
	notPEM := filepath.Join(p.dir, "empty.pem")
	if err := os.WriteFile(notPEM, []byte("no certificate here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*TLSConfig)
		want   string
	}{
		{"no certificate", func(c *TLSConfig) { c.CertFile = "" }, "tls-cert-file and tls-key-file"},
		{"bad auth-clients", func(c *TLSConfig) { c.AuthClients = "maybe" }, `tls-auth-clients must be yes, optional or no, not "maybe"`},
		{"yes without CA", func(c *TLSConfig) { c.CACertFile = "" }, "needs tls-ca-cert-file"},
		{"tls-cluster without CA", func(c *TLSConfig) { c.AuthClients, c.CACertFile, c.Cluster = "no", "", true }, "tls-cluster needs tls-ca-cert-file"},
		{"port out of range", func(c *TLSConfig) { c.Port = 70000 }, "tls-port 70000"},
		{"missing certificate file", func(c *TLSConfig) { c.CertFile = filepath.Join(p.dir, "nosuch.pem") }, "nosuch.pem"},
		{"CA file without certificates", func(c *TLSConfig) { c.CACertFile = notPEM }, "empty.pem holds no PEM certificate"},
	} {
		cfg := DefaultConfig()
		cfg.Dir = t.TempDir()
		cfg.Cluster = testClusterConfig(cfg.Dir)
		cfg.TLS = p.tlsConfig("yes")
		tc.change(cfg.TLS)
		srv, err := New(cfg)
		if err == nil {
			srv.Close()
			t.Errorf("%s: started", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to say %q", tc.name, err, tc.want)
		}
	}
}

// TestTLSCluster runs three nodes with tls-cluster: a follower forwards a
// write, asks the leader for a read index and relays a PUBLISH over TLS,
// every replica applies the same log, and a node's raft address answers
// nothing to plain RESP.
func TestTLSCluster(t *testing.T) {
	p := newTestPKI(t)
	srvs := startCluster(t, 3, func(c *Config) {
		c.TLS = p.tlsConfig("yes")
		c.TLS.Cluster = true
	})
	l := clusterLeader(t, srvs)
	f := dial(t, clusterFollowers(srvs, l)[0].Addr())
	f.expect("+OK\r\n", "SET", "k", "v")
	f.expect("$1\r\nv\r\n", "GET", "k")
	f.expect("*2\r\n$11\r\ntls-cluster\r\n$3\r\nyes\r\n", "CONFIG", "GET", "tls-cluster")
	sub := dial(t, l.Addr())
	sub.expect("*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n", "SUBSCRIBE", "news")
	f.expect(":0\r\n", "PUBLISH", "news", "hello")
	if got, want := sub.reply(), "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"; got != want {
		t.Fatalf("the leader's subscriber got %q, want %q", got, want)
	}
	waitApplied(t, srvs)
	checkDigests(t, srvs)

	expectNoPlainPong(t, l.Node().RaftAddr(), "a raft address with tls-cluster")
}

// TestTLSClusterMismatch joins a node to a cluster whose nodes call each
// other otherwise (over TLS, or in plain TCP): it is refused at start with
// both settings, where it used to join and leave a cluster of two with a
// member the other could not reach.
func TestTLSClusterMismatch(t *testing.T) {
	p := newTestPKI(t)
	withTLS := func(c *Config) {
		c.TLS = p.tlsConfig("yes")
		c.TLS.Cluster = true
	}
	for _, tlsMember := range []bool{true, false} {
		var member *Server
		cfg := joiningConfig(t, "")
		if tlsMember {
			member = startServer(t, withTLS)
		} else {
			member = startServer(t)
			withTLS(&cfg)
		}
		cfg.Cluster.Join = member.Addr()
		srv, err := New(cfg)
		if err == nil {
			srv.Close()
			t.Fatalf("a node joined a cluster with another tls-cluster (the member's: %v)", tlsMember)
		}
		want := fmt.Sprintf("--join %s: its cluster's nodes have --tls-cluster %s, this node %s: every member needs the same", member.Addr(), yesNo(tlsMember), yesNo(!tlsMember))
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
}

// expectNoPlainPong sends PING in plain RESP to addr, a TLS port, and
// fails the test if it is answered.
func expectNoPlainPong(t *testing.T, addr, what string) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	nc.SetReadDeadline(time.Now().Add(time.Minute))
	if got, _ := io.ReadAll(nc); strings.Contains(string(got), "PONG") {
		t.Errorf("plain RESP on %s answered %q", what, got)
	}
}

// TestTLSConfigSetReloads changes the TLS port's certificates with CONFIG
// SET: files that do not load are refused and change nothing; new ones
// serve the connections made after, while one made before goes on.
func TestTLSConfigSetReloads(t *testing.T) {
	p, p2 := newTestPKI(t), newTestPKI(t)
	srv := startServer(t, func(c *Config) { c.TLS = p.tlsConfig("yes") })
	ctx := context.Background()
	client := func(q *testPKI) *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: srv.TLSAddr(), MaxRetries: -1,
			TLSConfig: &tls.Config{RootCAs: q.roots, Certificates: []tls.Certificate{q.client}}})
		t.Cleanup(func() { rdb.Close() })
		return rdb
	}
	before := client(p)
	if err := before.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	plain := dial(t, srv.Addr())
	plain.expect("-ERR CONFIG SET failed (possibly related to argument 'tls-auth-clients') - argument(s) must be one of the following: no, yes, optional\r\n",
		"CONFIG", "SET", "tls-auth-clients", "maybe")
	if got := plain.do("CONFIG", "SET", "tls-cert-file", filepath.Join(p.dir, "nosuch.pem")); !strings.HasPrefix(got,
		"-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration: tls-cert-file ") {
		t.Errorf("CONFIG SET of a missing certificate: %q", got)
	}
	plain.expect("*2\r\n"+bulk("tls-cert-file")+bulk(p.serverCert), "CONFIG", "GET", "tls-cert-file")
	if err := client(p).Ping(ctx).Err(); err != nil {
		t.Fatalf("after a refused change: %v", err)
	}

	plain.expect("+OK\r\n", "CONFIG", "SET", "tls-cert-file", p2.serverCert, "tls-key-file", p2.serverKey, "tls-ca-cert-file", p2.caFile)
	if err := client(p).Ping(ctx).Err(); err == nil {
		t.Error("a client of the former CA was served after the change")
	}
	if v, err := client(p2).Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("a client of the new CA: %q, %v", v, err)
	}
	if err := before.Get(ctx, "k").Err(); err != nil {
		t.Errorf("the connection made before the change: %v", err)
	}
	plain.expect("+OK\r\n", "CONFIG", "SET", "tls-auth-clients", "no")
	anon := redis.NewClient(&redis.Options{Addr: srv.TLSAddr(), TLSConfig: &tls.Config{RootCAs: p2.roots}})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err != nil {
		t.Errorf("a client without a certificate after tls-auth-clients no: %v", err)
	}

	noTLS := dial(t, startServer(t).Addr())
	noTLS.expect("-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - presenced has no TLS port: it opens one at start, with --tls-port\r\n",
		"CONFIG", "SET", "tls-cert-file", p.serverCert)
}

// TestTLSClusterConfigSetReloads moves a tls-cluster to new certificates
// of a new CA, node by node, each trusting both CAs meanwhile; then a
// node that knows only the new CA joins: it calls the leader and is
// called by it, which works only if the leader shows and checks the new
// certificates both ways.
func TestTLSClusterConfigSetReloads(t *testing.T) {
	p, p2 := newTestPKI(t), newTestPKI(t)
	tlsCluster := func(q *testPKI) func(*Config) {
		return func(c *Config) {
			c.TLS = q.tlsConfig("yes")
			c.TLS.Cluster = true
		}
	}
	srvs := startCluster(t, 3, tlsCluster(p))
	both := filepath.Join(t.TempDir(), "both.pem")
	var bundle []byte
	for _, f := range []string{p.caFile, p2.caFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bundle = append(bundle, b...)
	}
	if err := os.WriteFile(both, bundle, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, s := range srvs {
		c := dial(t, s.Addr())
		c.expect("+OK\r\n", "CONFIG", "SET", "tls-cert-file", p2.serverCert, "tls-key-file", p2.serverKey, "tls-ca-cert-file", both)
		c.expect(":0\r\n", "SETBIT", "rotated", strconv.Itoa(i), "1")
	}
	joiner := startServer(t, clusterMember(3, srvs[0].Addr()), tlsCluster(p2))
	srvs = append(srvs, joiner)
	dial(t, joiner.Addr()).expect(":0\r\n", "SETBIT", "rotated", "3", "1")
	waitApplied(t, srvs)
	checkDigests(t, srvs)
	dial(t, joiner.Addr()).expect(":4\r\n", "BITCOUNT", "rotated")
}
