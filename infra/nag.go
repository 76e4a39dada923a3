package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
	"github.com/aws/jsii-runtime-go"
)

func applyNag(app awscdk.App) {
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}

func applyNagSuppressions(s *Stack) {}
