package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TLSFiles are the PEM files of a server started with Options.TLS: a throw-away CA,
// the server's certificate (for 127.0.0.1 and "localhost"), and a client certificate
// signed by the same CA.
type TLSFiles struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// ClientConfig returns a tls.Config that trusts the CA and presents the client
// certificate.
func (f *TLSFiles) ClientConfig() (*tls.Config, error) {
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, ServerName: "localhost"}, nil
}

// writeTLSFiles makes a CA, a server and a client certificate in dir.
func writeTLSFiles(dir string) (*TLSFiles, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redistest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	f := &TLSFiles{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"),
		ServerKey:  filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey:  filepath.Join(dir, "client-key.pem"),
	}
	if err := writePEM(f.CA, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, certPath, keyPath string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			DNSNames:     []string{"localhost"},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyPath, "EC PRIVATE KEY", keyDER)
	}
	if err := leaf(2, "redistest server", x509.ExtKeyUsageServerAuth, f.ServerCert, f.ServerKey); err != nil {
		return nil, err
	}
	if err := leaf(3, "redistest client", x509.ExtKeyUsageClientAuth, f.ClientCert, f.ClientKey); err != nil {
		return nil, err
	}
	return f, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
