module github.com/criticizer/criticizer/infra

go 1.26.8

require (
	github.com/Masterminds/semver/v3 v3.5.0 // indirect
	github.com/aws/aws-cdk-go/awscdk/v2 v2.270.0 // indirect
	github.com/aws/constructs-go/constructs/v10 v10.6.0 // indirect
	github.com/aws/jsii-runtime-go v1.139.0 // indirect
	github.com/cdklabs/awscdk-asset-awscli-go/awscliv1/v2 v2.2.292 // indirect
	github.com/cdklabs/awscdk-asset-node-proxy-agent-go/nodeproxyagentv6/v2 v2.1.2 // indirect
	github.com/cdklabs/cdk-nag-go/cdknag/v2 v2.38.2 // indirect
	github.com/cdklabs/cloud-assembly-schema-go/awscdkcloudassemblyschema/v54 v54.11.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
