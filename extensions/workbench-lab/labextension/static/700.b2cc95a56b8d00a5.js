"use strict";(self.rspackChunkkernel_workbench_lab=self.rspackChunkkernel_workbench_lab||[]).push([[700],{646(e,t,r){var o=r(601),n=r.n(o),a=r(314),s=(r.n(a))()(n());s.push([e.id,`/* Kernel Workbench sidebar. JupyterLab's CSS variables keep it in the user's theme. */
.wb-lab-sidebar {
  background: var(--jp-layout-color1);
  color: var(--jp-ui-font-color1);
  font-size: var(--jp-ui-font-size1);
  overflow-y: auto;
  padding: 8px;
}

.wb-lab-head {
  align-items: center;
  display: flex;
  justify-content: space-between;
  margin-bottom: 6px;
}

.wb-lab-title {
  font-size: var(--jp-ui-font-size2);
  font-weight: 600;
}

.wb-lab-status {
  color: var(--jp-ui-font-color2);
  margin-bottom: 8px;
  overflow-wrap: anywhere;
}

.wb-lab-error {
  color: var(--jp-error-color1);
}

.wb-lab-kernel {
  border-top: 1px solid var(--jp-border-color2);
  padding: 6px 0;
}

.wb-lab-kernel-head {
  align-items: center;
  display: flex;
  justify-content: space-between;
}

.wb-lab-kernel-name {
  font-family: var(--jp-code-font-family);
  font-weight: 600;
}

.wb-lab-kernel-path,
.wb-lab-empty {
  color: var(--jp-ui-font-color2);
  overflow-wrap: anywhere;
}

.wb-lab-sidebar button {
  background: var(--jp-layout-color2);
  border: 1px solid var(--jp-border-color1);
  border-radius: 2px;
  color: var(--jp-ui-font-color1);
  cursor: pointer;
  padding: 2px 8px;
}

.wb-lab-sessions {
  border-collapse: collapse;
  margin-top: 4px;
  width: 100%;
}

.wb-lab-sessions th,
.wb-lab-sessions td {
  padding: 1px 4px;
  text-align: left;
  white-space: nowrap;
}

.wb-lab-sessions th {
  color: var(--jp-ui-font-color2);
  font-weight: normal;
}

.wb-lab-speedup,
.wb-lab-best {
  font-variant-numeric: tabular-nums;
}

.wb-lab-session-status td {
  color: var(--jp-ui-font-color2);
  padding-bottom: 4px;
  white-space: normal;
}
`,""]),r.d(t,{},{A:s})},314(e){e.exports=function(e){var t=[];return t.toString=function(){return this.map(function(t){var r="",o=void 0!==t[5];return t[4]&&(r+="@supports (".concat(t[4],") {")),t[2]&&(r+="@media ".concat(t[2]," {")),o&&(r+="@layer".concat(t[5].length>0?" ".concat(t[5]):""," {")),r+=e(t),o&&(r+="}"),t[2]&&(r+="}"),t[4]&&(r+="}"),r}).join("")},t.i=function(e,r,o,n,a){"string"==typeof e&&(e=[[null,e,void 0]]);var s={};if(o)for(var i=0;i<this.length;i++){var c=this[i][0];null!=c&&(s[c]=!0)}for(var l=0;l<e.length;l++){var p=[].concat(e[l]);o&&s[p[0]]||(void 0!==a&&(void 0===p[5]||(p[1]="@layer".concat(p[5].length>0?" ".concat(p[5]):""," {").concat(p[1],"}")),p[5]=a),r&&(p[2]&&(p[1]="@media ".concat(p[2]," {").concat(p[1],"}")),p[2]=r),n&&(p[4]?(p[1]="@supports (".concat(p[4],") {").concat(p[1],"}"),p[4]=n):p[4]="".concat(n)),t.push(p))}},t}},601(e){e.exports=function(e){return e[1]}},72(e){var t=[];function r(e){for(var r=-1,o=0;o<t.length;o++)if(t[o].identifier===e){r=o;break}return r}function o(e,o){for(var n={},a=[],s=0;s<e.length;s++){var i=e[s],c=o.base?i[0]+o.base:i[0],l=n[c]||0,p="".concat(c," ").concat(l);n[c]=l+1;var u=r(p),d={css:i[1],media:i[2],sourceMap:i[3],supports:i[4],layer:i[5]};if(-1!==u)t[u].references++,t[u].updater(d);else{var f=function(e,t){var r=t.domAPI(t);return r.update(e),function(t){t?(t.css!==e.css||t.media!==e.media||t.sourceMap!==e.sourceMap||t.supports!==e.supports||t.layer!==e.layer)&&r.update(e=t):r.remove()}}(d,o);o.byIndex=s,t.splice(s,0,{identifier:p,updater:f,references:1})}a.push(p)}return a}e.exports=function(e,n){var a=o(e=e||[],n=n||{});return function(e){e=e||[];for(var s=0;s<a.length;s++){var i=r(a[s]);t[i].references--}for(var c=o(e,n),l=0;l<a.length;l++){var p=r(a[l]);0===t[p].references&&(t[p].updater(),t.splice(p,1))}a=c}}},40(e){var t={};e.exports=function(e,r){var o=function(e){if(void 0===t[e]){var r=document.querySelector(e);if(window.HTMLIFrameElement&&r instanceof window.HTMLIFrameElement)try{r=r.contentDocument.head}catch(e){r=null}t[e]=r}return t[e]}(e);if(!o)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");o.appendChild(r)}},540(e){e.exports=function(e){var t=document.createElement("style");return e.setAttributes(t,e.attributes),e.insert(t,e.options),t}},56(e,t,r){e.exports=function(e){var t=r.nc;t&&e.setAttribute("nonce",t)}},825(e){e.exports=function(e){if("u"<typeof document)return{update:function(){},remove:function(){}};var t=e.insertStyleElement(e);return{update:function(r){var o,n,a;o="",r.supports&&(o+="@supports (".concat(r.supports,") {")),r.media&&(o+="@media ".concat(r.media," {")),(n=void 0!==r.layer)&&(o+="@layer".concat(r.layer.length>0?" ".concat(r.layer):""," {")),o+=r.css,n&&(o+="}"),r.media&&(o+="}"),r.supports&&(o+="}"),(a=r.sourceMap)&&"u">typeof btoa&&(o+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(a))))," */")),e.styleTagTransform(o,t,e.options)},remove:function(){var e;null===(e=t).parentNode||e.parentNode.removeChild(e)}}}},113(e){e.exports=function(e,t){if(t.styleSheet)t.styleSheet.cssText=e;else{for(;t.firstChild;)t.removeChild(t.firstChild);t.appendChild(document.createTextNode(e))}}},959(e,t,r){var o=r(72),n=r.n(o),a=r(825),s=r.n(a),i=r(40),c=r.n(i),l=r(56),p=r.n(l),u=r(540),d=r.n(u),f=r(113),b=r.n(f),v=r(646),h={};h.styleTagTransform=b(),h.setAttributes=p(),h.insert=c().bind(null,"head"),h.domAPI=s(),h.insertStyleElement=d(),n()(v.A,h),v.A&&v.A.locals&&v.A.locals}}]);