package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/presenced/presenced/cluster"
)

// TLSConfig configures a port that serves clients over TLS, beside the
// plain TCP port, as redis-server's tls-* settings do, and whether nodes
// call on each other over TLS too.
type TLSConfig struct {
	// Port is tls-port; 0 picks a free one (see Server.TLSAddr).
	Port int
	// CertFile and KeyFile are tls-cert-file and tls-key-file: the
	// server's certificate (a PEM chain) and its private key.
	CertFile, KeyFile string
	// CACertFile is tls-ca-cert-file: the certificates (PEM) that clients'
	// certificates must chain to.
	CACertFile string
	// AuthClients is tls-auth-clients: "yes" (Redis's default) requires a
	// client certificate, "optional" checks one if sent, "no" asks for
	// none.
	AuthClients string
	// Cluster is tls-cluster: nodes call on each other over TLS too, on
	// their raft addresses, each showing its certificate (which must
	// serve as a client's too) to the others, which check it against
	// CACertFile.
	Cluster bool
}

// DefaultTLSConfig returns the settings of a TLS port whose certificate,
// key and CA certificates are still to be named.
func DefaultTLSConfig() TLSConfig { return TLSConfig{AuthClients: "yes"} }

// tlsSetting returns the TLS settings CONFIG GET reports: Redis's
// defaults (tls-port 0) without a TLS port.
func (c *Config) tlsSetting() TLSConfig {
	if c.TLS == nil {
		return DefaultTLSConfig()
	}
	return *c.TLS
}

// Validate reports the first setting that cannot work, in plain words.
func (c TLSConfig) Validate() error {
	switch {
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("server: tls-port %d is not between 0 and 65535", c.Port)
	case c.CertFile == "" || c.KeyFile == "":
		return errors.New("server: a TLS port needs tls-cert-file and tls-key-file")
	case c.AuthClients != "yes" && c.AuthClients != "optional" && c.AuthClients != "no":
		return fmt.Errorf("server: tls-auth-clients must be yes, optional or no, not %q", c.AuthClients)
	case c.AuthClients != "no" && c.CACertFile == "":
		return errors.New("server: tls-auth-clients " + c.AuthClients + " needs tls-ca-cert-file (or tls-auth-clients no)")
	case c.Cluster && c.CACertFile == "":
		return errors.New("server: tls-cluster needs tls-ca-cert-file")
	}
	return nil
}

// tlsState is the TLS settings in force, loaded from the files the tls-*
// settings name. CONFIG SET of one of them loads the files again and swaps
// the result in whole: connections made from then on, of clients and
// between nodes, use it, while established ones go on as they began.
type tlsState struct {
	mu  sync.Mutex // serializes reloads
	cur atomic.Pointer[tlsLoaded]
}

// tlsLoaded is one loading of the tls-* files.
type tlsLoaded struct {
	clients    *tls.Config // the TLS port's
	peerServer *tls.Config // the raft address's, for the nodes that call
	cert       *tls.Certificate
	roots      *x509.CertPool // the CA certificates, nil without
}

// load reads the certificates c names; an error names the file it could
// not use.
func (c TLSConfig) load() (*tlsLoaded, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("server: tls-cert-file %s, tls-key-file %s: %w", c.CertFile, c.KeyFile, err)
	}
	l := &tlsLoaded{cert: &cert}
	if c.CACertFile != "" {
		pem, err := os.ReadFile(c.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("server: tls-ca-cert-file: %w", err)
		}
		l.roots = x509.NewCertPool()
		if !l.roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("server: tls-ca-cert-file %s holds no PEM certificate", c.CACertFile)
		}
	}
	// Redis's default tls-protocols: TLS 1.2 and 1.3.
	l.clients = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: l.roots, MinVersion: tls.VersionTLS12}
	l.peerServer = l.clients.Clone()
	l.peerServer.ClientAuth = tls.RequireAndVerifyClientCert
	switch c.AuthClients {
	case "yes":
		l.clients.ClientAuth = tls.RequireAndVerifyClientCert
	case "optional":
		l.clients.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return l, nil
}

// clientsConfig is the TLS port's configuration: the latest loading's.
func (st *tlsState) clientsConfig() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return st.cur.Load().clients, nil
	}}
}

// peerTLS is the raft address's configuration with tls-cluster: each node
// shows the latest loading's certificate and checks the others' against
// the latest loading's CA certificates, both ways.
func (st *tlsState) peerTLS() *cluster.PeerTLS {
	return &cluster.PeerTLS{
		Server: &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return st.cur.Load().peerServer, nil
		}},
		Client: &tls.Config{
			MinVersion: tls.VersionTLS12,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				return st.cur.Load().cert, nil
			},
			// The check of the chain is VerifyConnection's, against the CA
			// certificates of the moment: a tls.Config's roots are fixed.
			InsecureSkipVerify: true,
			VerifyConnection: func(cs tls.ConnectionState) error {
				return verifyServer(cs, st.cur.Load().roots)
			},
		},
	}
}

// verifyServer checks the certificate a node showed as crypto/tls does for
// a client: that it chains to roots and names the host dialed.
func verifyServer(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("server: the node showed no certificate")
	}
	opts := x509.VerifyOptions{Roots: roots, DNSName: cs.ServerName, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(opts)
	return err
}

// tlsParameters are the tls-* settings CONFIG SET may change: those
// whose files are loaded again.
var tlsParameters = []string{"tls-cert-file", "tls-key-file", "tls-ca-cert-file", "tls-auth-clients"}

// tlsSetter returns the CONFIG SET of a tls-* setting that set changes:
// refused without a TLS port, which presenced opens only at start.
func tlsSetter(set func(c *TLSConfig, v string) string) func(*Config, string) string {
	return func(c *Config, v string) string {
		if c.TLS == nil {
			return "presenced has no TLS port: it opens one at start, with --tls-port"
		}
		tc := *c.TLS // c is a copy, but c.TLS the settings in force
		if msg := set(&tc, v); msg != "" {
			return msg
		}
		c.TLS = &tc
		return ""
	}
}

// loadTLSFor loads the files of the TLS settings in cfg when CONFIG SET
// changes one of them (seen), returning nil when it changes none, or the
// error reply that refuses the change.
func loadTLSFor(cfg *Config, seen map[string]bool) (*tlsLoaded, error) {
	for _, name := range tlsParameters {
		if !seen[name] {
			continue
		}
		l, err := cfg.TLS.load()
		if err != nil {
			return nil, errors.New(configSetFailed([]byte(name), "Unable to update TLS configuration: "+strings.TrimPrefix(err.Error(), "server: ")))
		}
		return l, nil
	}
	return nil, nil
}

// listenTLS opens the TLS port on the bind address, or returns nil when
// the server has none.
func (s *Server) listenTLS(cfg Config) (net.Listener, error) {
	if cfg.TLS == nil {
		return nil, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.TLS.Port)))
	if err != nil {
		return nil, err
	}
	return tls.NewListener(ln, s.tls.clientsConfig()), nil
}

// overTLS reports whether the client is connected to the TLS port.
func (c *client) overTLS() bool {
	_, ok := c.nc.(*tls.Conn)
	return ok
}
