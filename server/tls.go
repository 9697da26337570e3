package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

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

// load reads the certificates and returns the TLS settings of the
// clients' port and, with Cluster, of the raft address (else nil); an
// error names the file it could not use.
func (c TLSConfig) load() (*tls.Config, *cluster.PeerTLS, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("server: tls-cert-file %s, tls-key-file %s: %w", c.CertFile, c.KeyFile, err)
	}
	// Redis's default tls-protocols: TLS 1.2 and 1.3.
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.CACertFile != "" {
		pem, err := os.ReadFile(c.CACertFile)
		if err != nil {
			return nil, nil, fmt.Errorf("server: tls-ca-cert-file: %w", err)
		}
		tc.ClientCAs = x509.NewCertPool()
		if !tc.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("server: tls-ca-cert-file %s holds no PEM certificate", c.CACertFile)
		}
	}
	var peers *cluster.PeerTLS
	if c.Cluster {
		server := tc.Clone()
		server.ClientAuth = tls.RequireAndVerifyClientCert
		client := &tls.Config{Certificates: tc.Certificates, RootCAs: tc.ClientCAs, MinVersion: tls.VersionTLS12}
		peers = &cluster.PeerTLS{Server: server, Client: client}
	}
	switch c.AuthClients {
	case "yes":
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	case "optional":
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return tc, peers, nil
}

// listenTLS opens the TLS port on the bind address, or returns nil when
// the server has none.
func (s *Server) listenTLS(cfg Config) (net.Listener, error) {
	if s.tls == nil {
		return nil, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.TLS.Port)))
	if err != nil {
		return nil, err
	}
	return tls.NewListener(ln, s.tls), nil
}

// overTLS reports whether the client is connected to the TLS port.
func (c *client) overTLS() bool {
	_, ok := c.nc.(*tls.Conn)
	return ok
}
