package kubernetes_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The operator's inputs the kustomization reads (kustomization.yaml's
// generators; README.md). They are not committed, so the tests render a
// copy of this directory with these files made up.
var (
	secretFiles = []string{
		"secrets/api-keys.env",
		"secrets/kafka-ca.crt", "secrets/kafka-password",
		"secrets/postgres-ca.crt", "secrets/postgres-password",
		"secrets/gateway-tls.crt", "secrets/gateway-tls.key",
		"secrets/admin-tls.crt", "secrets/admin-tls.key", "secrets/admin-ca.crt",
		"secrets/admin-token",
	}
	contractsFile = "contracts/contracts.binpb"
)

// newDecoder decodes the kinds a sluice deployment may hold, strictly:
// an unknown or duplicate field is an error, and so is an unknown kind.
func newDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme, rbacv1.AddToScheme,
		monitoringv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// stageBase copies this directory's manifests, configs and kustomization
// into a temporary directory, without whatever secrets/ and contracts/ hold
// here, and fills those with test files: a CA and a certificate it signs
// for every TLS file, random API keys and passwords, and the example
// contracts.
func stageBase(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, path), 0o755)
		}
		if strings.HasPrefix(path, "secrets/") || strings.HasPrefix(path, "contracts/") || strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, path), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	ca, caKey := newCA(t)
	caPEM := pemCert(ca.Raw)
	leaf, leafKey := newLeaf(t, ca, caKey, "sluice-admin", "sluice-gateway", "sluice-gateway.sluice.svc", "sluice-consumer.sluice.svc")
	files := map[string][]byte{
		"secrets/api-keys.env":      fmt.Appendf(nil, "SLUICE_KEY_CHECKOUT=%s\nSLUICE_KEY_PLATFORM_LOGS=%s\n", randomHex(t), randomHex(t)),
		"secrets/kafka-ca.crt":      caPEM,
		"secrets/kafka-password":    []byte(randomHex(t) + "\n"),
		"secrets/postgres-ca.crt":   caPEM,
		"secrets/postgres-password": []byte(randomHex(t)),
		"secrets/gateway-tls.crt":   append(pemCert(leaf), caPEM...),
		"secrets/gateway-tls.key":   leafKey,
		"secrets/admin-tls.crt":     append(pemCert(leaf), caPEM...),
		"secrets/admin-tls.key":     leafKey,
		"secrets/admin-ca.crt":      caPEM,
		"secrets/admin-token":       []byte(randomHex(t) + "\n"),
	}
	if len(files) != len(secretFiles) {
		t.Fatalf("stageBase makes %d secret files, the kustomization reads %d", len(files), len(secretFiles))
	}
	for _, name := range secretFiles {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	contracts, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "contracts.binpb"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, contractsFile), contracts, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// render runs kustomize over dir as `kubectl apply -k` does and decodes
// every object strictly.
func render(t *testing.T, dir string) ([]runtime.Object, error) {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build: %w", err)
	}
	dec := newDecoder(t)
	var objs []runtime.Object
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		obj, _, err := dec.Decode(y, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.GetKind(), r.GetName(), err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// deployment is the rendered base, sorted by kind.
type deployment struct {
	all             []runtime.Object
	statefulSets    []*appsv1.StatefulSet
	deployments     []*appsv1.Deployment
	services        []*corev1.Service
	configMaps      []*corev1.ConfigMap
	secrets         []*corev1.Secret
	pdbs            []*policyv1.PodDisruptionBudget
	hpas            []*autoscalingv2.HorizontalPodAutoscaler
	serviceMonitors []*monitoringv1.ServiceMonitor
	networkPolicies []*networkingv1.NetworkPolicy
}

func renderBase(t *testing.T) deployment {
	t.Helper()
	objs, err := render(t, stageBase(t))
	if err != nil {
		t.Fatal(err)
	}
	d := deployment{all: objs}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			d.statefulSets = append(d.statefulSets, o)
		case *appsv1.Deployment:
			d.deployments = append(d.deployments, o)
		case *corev1.Service:
			d.services = append(d.services, o)
		case *corev1.ConfigMap:
			d.configMaps = append(d.configMaps, o)
		case *corev1.Secret:
			d.secrets = append(d.secrets, o)
		case *policyv1.PodDisruptionBudget:
			d.pdbs = append(d.pdbs, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			d.hpas = append(d.hpas, o)
		case *monitoringv1.ServiceMonitor:
			d.serviceMonitors = append(d.serviceMonitors, o)
		case *networkingv1.NetworkPolicy:
			d.networkPolicies = append(d.networkPolicies, o)
		case *corev1.Namespace:
		default:
			t.Fatalf("rendered a %T, which no test looks at", o)
		}
	}
	return d
}

func (d deployment) configMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	for _, c := range d.configMaps {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no ConfigMap %s", name)
	return nil
}

func (d deployment) secret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	for _, s := range d.secrets {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no Secret %s", name)
	return nil
}

// repoRoot is the root of sluice's module, two levels up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "sluice", "main.go")); err != nil {
		t.Fatalf("sluice's module is not at %s: %v", root, err)
	}
	return root
}

func randomHex(t *testing.T) string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluice test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

// newLeaf is a server certificate for names signed by ca, and its key in PEM.
func newLeaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, names ...string) (der, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err = x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
