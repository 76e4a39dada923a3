package devstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/criticizer/criticizer/internal/devstack/ports"
)

// Ports are where the emulators listen (internal/devstack/ports).
type Ports = ports.Ports

// RunPorts are the ports of `make run`; TestPorts those of `make test`.
var (
	RunPorts  = ports.Run
	TestPorts = ports.Test
)

// FreePorts asks the kernel for three unused ports (ports.Pick).
func FreePorts() (Ports, error) { return ports.Pick() }

// Services are the running emulators.
type Services struct {
	Ports Ports
	// FauxqsURL is fauxqs itself, behind the SQS proxy that listens on
	// Ports.SQS (SQSProxy); only tests that show what the proxy corrects
	// talk to it.
	FauxqsURL string
	procs     []*process
	proxy     *SQSProxy
	server    *http.Server
	sesQuota  *SESQuotaServer
}

// StartServices starts the three emulators from the npm packages installed in
// npmDir (see internal/devstack/_npm/package.json) and waits until each
// listens. Logs go to logDir.
func StartServices(ctx context.Context, npmDir, logDir string, ports Ports) (*Services, error) {
	npmDir, err := filepath.Abs(npmDir)
	if err != nil {
		return nil, err
	}
	mods := filepath.Join(npmDir, "node_modules")
	jarDir := filepath.Join(mods, "amplify-dynamodb-simulator", "emulator")
	if _, err := os.Stat(filepath.Join(jarDir, "DynamoDBLocal.jar")); err != nil {
		return nil, fmt.Errorf("DynamoDB Local is not installed in %s: run `make deps` (npm ci): %w", npmDir, err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("java (17 or later) is needed for DynamoDB Local: apt-get install openjdk-17-jre-headless")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("node is needed for the SQS and SES emulators")
	}
	for name, port := range map[string]int{"DynamoDB Local": ports.DynamoDB, "fauxqs": ports.SQS, "aws-ses-v2-local": ports.SES} {
		if !portFree(addr(port)) {
			return nil, fmt.Errorf("%s: 127.0.0.1:%d: %w (is another stack running? stop it, or `make stop`)", name, port, errPortBusy)
		}
	}
	s := &Services{Ports: ports}
	start := func(name, dir string, port int, env []string, argv ...string) error {
		p, err := startProcess(name, dir, logDir, env, argv...)
		if err != nil {
			return err
		}
		s.procs = append(s.procs, p)
		return p.waitPort(ctx, addr(port), 60*time.Second)
	}
	if err := start("dynamodb", jarDir, ports.DynamoDB, nil, java, "-Xmx512m",
		"-Djava.library.path=./DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar",
		"-inMemory", "-sharedDb", "-port", strconv.Itoa(ports.DynamoDB)); err != nil {
		s.Stop()
		return nil, err
	}
	// fauxqs listens on a port of its own; the SQS proxy takes the SQS
	// port in front of it.
	fauxqsPort, err := freePort()
	if err != nil {
		s.Stop()
		return nil, err
	}
	if err := start("fauxqs", npmDir, fauxqsPort,
		[]string{"FAUXQS_PORT=" + strconv.Itoa(fauxqsPort), "FAUXQS_HOST=localhost", "FAUXQS_LOGGER=false"},
		node, filepath.Join(mods, "fauxqs", "dist", "cli.js")); err != nil {
		s.Stop()
		return nil, err
	}
	s.FauxqsURL = "http://" + addr(fauxqsPort)
	if err := s.startProxy(logDir, ports.SQS); err != nil {
		s.Stop()
		return nil, err
	}
	// The SES emulator listens on a port of its own, behind the quota
	// proxy on the SES port (sesquota.go: GetAccount and quota errors).
	sesPort, err := freePort()
	if err != nil {
		s.Stop()
		return nil, err
	}
	if err := start("ses", npmDir, sesPort, nil,
		node, filepath.Join(mods, "aws-ses-v2-local", "dist", "cli.js"), "--host", "127.0.0.1", "--port", strconv.Itoa(sesPort)); err != nil {
		s.Stop()
		return nil, err
	}
	if s.sesQuota, err = startStackSESQuota(ports.SES, sesPort); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// startProxy serves the SQS proxy in front of fauxqs on port, logging to
// logDir/sqsproxy.log.
func (s *Services) startProxy(logDir string, port int) error {
	lf, err := os.Create(filepath.Join(logDir, "sqsproxy.log"))
	if err != nil {
		return fmt.Errorf("sqs proxy log: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(lf, nil))
	proxy, err := NewSQSProxy(s.FauxqsURL, log)
	if err != nil {
		lf.Close()
		return err
	}
	ln, err := net.Listen("tcp", addr(port))
	if err != nil {
		lf.Close()
		proxy.Close()
		return fmt.Errorf("sqs proxy: %s: %w", addr(port), err)
	}
	s.proxy, s.server = proxy, &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	s.server.RegisterOnShutdown(func() { lf.Close() })
	go func() { _ = s.server.Serve(ln) }()
	return nil
}

// Stop stops every emulator it started.
func (s *Services) Stop() {
	if s.sesQuota != nil {
		_ = s.sesQuota.Close()
		s.sesQuota = nil
	}
	if s.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.server.Shutdown(ctx)
		cancel()
		s.proxy.Close()
		s.server = nil
	}
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].stop()
	}
	s.procs = nil
}

func addr(port int) string { return ports.Addr(port) }

// freePort asks the kernel for an unused port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
