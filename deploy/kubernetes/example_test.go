package kubernetes_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestExampleContractsAreTheExamples: the example overlay's descriptor set
// is examples/contracts.binpb, the one `sluice dev` embeds and the configs'
// contracts.types name (kustomize reads only files under the overlay, so
// it is a copy).
func TestExampleContractsAreTheExamples(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "contracts.binpb"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(exampleOverlay, "contracts.binpb"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s/contracts.binpb differs from examples/contracts.binpb: refresh it with\n\tcp examples/contracts.binpb deploy/kubernetes/%s/", exampleOverlay, exampleOverlay)
	}
}

// TestSamplesAreMarked: every secret input the example overlay commits is
// under SAMPLE-secrets/ and says SAMPLE in its content, so that no one
// mistakes it for a real one, and every Secret the overlay renders holds
// only such content.
func TestSamplesAreMarked(t *testing.T) {
	dir := filepath.Join(exampleOverlay, "SAMPLE-secrets")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	samples := map[string]bool{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("SAMPLE")) {
			t.Errorf("%s/%s does not say SAMPLE", dir, e.Name())
		}
		samples[string(b)] = true
	}
	d := renderExample(t)
	if len(d.secrets) == 0 {
		t.Fatal("the example renders no Secret")
	}
	for _, s := range d.secrets {
		for k, v := range s.Data {
			if s.Name == "sluice-api-keys" || strings.HasPrefix(s.Name, "sluice-api-keys-") {
				if !bytes.HasPrefix(v, []byte("SAMPLE-")) {
					t.Errorf("Secret %s key %s is not a SAMPLE value", s.Name, k)
				}
				continue
			}
			if !samples[string(v)] {
				t.Errorf("Secret %s key %s is not the content of a file in %s", s.Name, k, dir)
			}
		}
	}
}

// TestExposure: each Ingress and route sends to the clients' Service
// sluice-gateway on an API port, never the admin port, with TLS toward the
// clients; the BackendTLSPolicy makes the Gateway speak TLS to the
// listeners (which speak nothing else) and its CA is in the overlay.
func TestExposure(t *testing.T) {
	d := renderExample(t)
	i := slices.IndexFunc(d.services, func(s *corev1.Service) bool { return s.Name == "sluice-gateway" })
	if i < 0 {
		t.Fatal("no Service sluice-gateway")
	}
	svc := d.services[i]
	byName := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		byName[p.Name] = p.Port
	}
	if len(d.ingresses) == 0 || len(d.httpRoutes) == 0 || len(d.grpcRoutes) == 0 {
		t.Fatalf("%d Ingresses, %d HTTPRoutes, %d GRPCRoutes: want the two examples", len(d.ingresses), len(d.httpRoutes), len(d.grpcRoutes))
	}
	reached := map[string]bool{}
	for _, in := range d.ingresses {
		if len(in.Spec.TLS) == 0 || in.Spec.TLS[0].SecretName == "" {
			t.Errorf("Ingress %s has no TLS", in.Name)
		}
		for _, r := range in.Spec.Rules {
			for _, p := range r.HTTP.Paths {
				b := p.Backend.Service
				if b == nil || b.Name != svc.Name {
					t.Errorf("Ingress %s: backend %+v is not Service %s", in.Name, p.Backend, svc.Name)
					continue
				}
				port := b.Port.Number
				if b.Port.Name != "" {
					var ok bool
					if port, ok = byName[b.Port.Name]; !ok {
						t.Errorf("Ingress %s: Service %s has no port %q", in.Name, svc.Name, b.Port.Name)
					}
				}
				reached["ingress/"+portName(svc, port)] = true
			}
		}
	}
	for _, g := range d.gateways {
		for _, l := range g.Spec.Listeners {
			if l.TLS == nil || len(l.TLS.CertificateRefs) == 0 {
				t.Errorf("Gateway %s listener %s has no TLS certificate", g.Name, l.Name)
			}
		}
	}
	for _, r := range d.httpRoutes {
		for _, rule := range r.Spec.Rules {
			for _, b := range rule.BackendRefs {
				if string(b.Name) != svc.Name || b.Port == nil {
					t.Errorf("HTTPRoute %s: backend %s is not Service %s on a port", r.Name, b.Name, svc.Name)
					continue
				}
				reached["gateway-api/"+portName(svc, int32(*b.Port))] = true
			}
		}
	}
	for _, r := range d.grpcRoutes {
		for _, rule := range r.Spec.Rules {
			for _, b := range rule.BackendRefs {
				if string(b.Name) != svc.Name || b.Port == nil {
					t.Errorf("GRPCRoute %s: backend %s is not Service %s on a port", r.Name, b.Name, svc.Name)
					continue
				}
				reached["gateway-api/"+portName(svc, int32(*b.Port))] = true
			}
		}
	}
	for _, want := range []string{"ingress/http", "ingress/grpc", "gateway-api/http", "gateway-api/grpc"} {
		if !reached[want] {
			t.Errorf("no %s: reached %v", want, reached)
		}
	}
	for k := range reached {
		if strings.HasSuffix(k, "/") || strings.HasSuffix(k, "/admin") {
			t.Errorf("%s reaches a port that is not the API's", k)
		}
	}
	p := onlyOne(t, "BackendTLSPolicy", d.backendTLS)
	if len(p.Spec.TargetRefs) != 1 || string(p.Spec.TargetRefs[0].Name) != svc.Name || p.Spec.TargetRefs[0].Kind != "Service" {
		t.Errorf("BackendTLSPolicy %s targets %+v, want Service %s", p.Name, p.Spec.TargetRefs, svc.Name)
	}
	for _, ref := range p.Spec.Validation.CACertificateRefs {
		if ref.Kind != "ConfigMap" {
			t.Errorf("BackendTLSPolicy %s: CA of kind %s", p.Name, ref.Kind)
			continue
		}
		if _, ok := d.configMap(t, string(ref.Name)).Data["ca.crt"]; !ok {
			t.Errorf("BackendTLSPolicy %s: ConfigMap %s has no ca.crt", p.Name, ref.Name)
		}
	}
}

// portName is the name of svc's port number n, "" when it has none.
func portName(svc *corev1.Service, n int32) string {
	for _, p := range svc.Spec.Ports {
		if p.Port == n {
			return p.Name
		}
	}
	return ""
}
