"""The object stores' stand-ins keep the rules they claim, with the stores' documents as the source
(localcloud.S3Proxy's docstring): a body that differs from its Content-MD5 is refused with BadDigest and
not stored (moto alone ignores the header), and a store whose ETags are no MD5 (OBS with SSE-KMS) still
matches the conditions that name its own ETags (s3transfer's ranged GETs carry the HEAD's ETag in If-Match).
"""
import base64
import hashlib
import os

import boto3
import pytest
from botocore.exceptions import ClientError

from localcloud.standins import ObjectStorage
from localcloud import LocalS3, S3Proxy


@pytest.fixture
def moto():
    server = LocalS3()
    yield server
    server.stop()


def client(url):
    return boto3.client('s3', endpoint_url=url, region_name='us-east-1', **LocalS3.CREDENTIALS)


def test_moto_alone_ignores_content_md5_so_the_stand_in_checks_it(moto):
    wrong = base64.b64encode(hashlib.md5(b'other bytes').digest()).decode()
    direct = moto.client()
    direct.create_bucket(Bucket='bucket-md5')
    direct.put_object(Bucket='bucket-md5', Key='moto', Body=b'hello', ContentMD5=wrong)  # moto takes it
    proxy = S3Proxy(moto.url)
    try:
        s3 = client(proxy.url)
        with pytest.raises(ClientError, match='BadDigest'):
            s3.put_object(Bucket='bucket-md5', Key='proxy', Body=b'hello', ContentMD5=wrong)
        upload = s3.create_multipart_upload(Bucket='bucket-md5', Key='parts')['UploadId']
        with pytest.raises(ClientError, match='BadDigest'):
            s3.upload_part(Bucket='bucket-md5', Key='parts', UploadId=upload, PartNumber=1, Body=b'x' * 100,
                           ContentMD5=wrong)
        assert 'Contents' not in direct.list_objects_v2(Bucket='bucket-md5', Prefix='proxy'), 'a refused PUT was stored'
        right = base64.b64encode(hashlib.md5(b'hello').digest()).decode()
        s3.put_object(Bucket='bucket-md5', Key='proxy', Body=b'hello', ContentMD5=right)
    finally:
        proxy.stop()


def test_obs_answers_etags_that_are_no_md5_and_keeps_its_conditions(moto, tmp_path):
    obs = ObjectStorage('huaweicloud', moto.url)
    try:
        s3 = client(obs.url)
        s3.create_bucket(Bucket='bucket-sse')
        assert s3.put_object(Bucket='bucket-sse', Key='small', Body=b'hello')['ETag'].strip('"') \
            != hashlib.md5(b'hello').hexdigest()
        data = os.urandom((8 << 20) * 2 + 5)  # multipart, and a download in ranges under If-Match
        (tmp_path / 'big').write_bytes(data)
        s3.upload_file(str(tmp_path / 'big'), 'bucket-sse', 'big')
        s3.download_file('bucket-sse', 'big', str(tmp_path / 'back'))
        assert (tmp_path / 'back').read_bytes() == data
        upload = s3.create_multipart_upload(Bucket='bucket-sse', Key='parts')['UploadId']
        part = s3.upload_part(Bucket='bucket-sse', Key='parts', UploadId=upload, PartNumber=1, Body=b'p' * 100)['ETag']
        assert part.strip('"') != hashlib.md5(b'p' * 100).hexdigest()
        s3.complete_multipart_upload(Bucket='bucket-sse', Key='parts', UploadId=upload,
                                     MultipartUpload={'Parts': [{'PartNumber': 1, 'ETag': part}]})
        with pytest.raises(ClientError, match='412|PreconditionFailed'):
            s3.put_object(Bucket='bucket-sse', Key='parts', Body=b'again', IfNoneMatch='*')
        head = s3.head_object(Bucket='bucket-sse', Key='big')['ETag']
        with pytest.raises(ClientError, match='412|PreconditionFailed'):
            s3.get_object(Bucket='bucket-sse', Key='big', IfMatch='"' + '0' * 32 + '"')
        assert s3.get_object(Bucket='bucket-sse', Key='big', IfMatch=head, Range='bytes=0-3')['Body'].read() == data[:4]
    finally:
        obs.stop()
