#!/usr/bin/env python3
"""What the tests ask of boto3 against the test Ceph cluster (TestCeph.swift): an independent S3
client reading and writing what Exosphere's own client wrote and read, and the direct baseline of
the throughput figures.

    s3_tool.py --endpoint URL --access-key ID --secret-key SECRET COMMAND ...
      create-bucket BUCKET
      get BUCKET KEY OUT          the object's bytes into OUT; prints its ETag
      put BUCKET KEY IN           IN's bytes as the object; prints its ETag
      list BUCKET PREFIX          the keys under PREFIX, one a line
      fetch URL OUT               a plain GET of a (presigned) URL into OUT; prints the status
      bench-put BUCKET PREFIX IN COUNT    COUNT puts of IN; prints the seconds they took
      bench-get BUCKET PREFIX COUNT       gets of PREFIX0..PREFIX<COUNT-1>; prints the seconds
"""
import argparse
import sys
import time
import urllib.error
import urllib.request

import boto3
from botocore.config import Config


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--access-key", required=True)
    parser.add_argument("--secret-key", required=True)
    parser.add_argument("command")
    parser.add_argument("arguments", nargs="*")
    options = parser.parse_args()
    s3 = boto3.client(
        "s3",
        endpoint_url=options.endpoint,
        aws_access_key_id=options.access_key,
        aws_secret_access_key=options.secret_key,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    command, arguments = options.command, options.arguments
    if command == "create-bucket":
        (bucket,) = arguments
        s3.create_bucket(Bucket=bucket)
    elif command == "get":
        bucket, key, out = arguments
        answer = s3.get_object(Bucket=bucket, Key=key)
        with open(out, "wb") as file:
            file.write(answer["Body"].read())
        print(answer["ETag"])
    elif command == "put":
        bucket, key, path = arguments
        with open(path, "rb") as file:
            print(s3.put_object(Bucket=bucket, Key=key, Body=file.read())["ETag"])
    elif command == "list":
        bucket, prefix = arguments
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                print(item["Key"])
    elif command == "fetch":
        url, out = arguments
        try:
            with urllib.request.urlopen(url) as answer:
                status, body = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read()
        with open(out, "wb") as file:
            file.write(body)
        print(status)
    elif command == "bench-put":
        bucket, prefix, path, count = arguments
        with open(path, "rb") as file:
            body = file.read()
        start = time.monotonic()
        for index in range(int(count)):
            s3.put_object(Bucket=bucket, Key=f"{prefix}{index}", Body=body)
        print(f"{time.monotonic() - start:.6f}")
    elif command == "bench-get":
        bucket, prefix, count = arguments
        start = time.monotonic()
        for index in range(int(count)):
            s3.get_object(Bucket=bucket, Key=f"{prefix}{index}")["Body"].read()
        print(f"{time.monotonic() - start:.6f}")
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
